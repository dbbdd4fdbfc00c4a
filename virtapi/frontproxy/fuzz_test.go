package frontproxy

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzFrontProxyHeaders reads arbitrary request heads, as they arrive on
// the wire, through the Authenticator. Whatever the headers, a
// request without the aggregator's certificate gets no identity; with it,
// the user, groups and extras are exactly what the identity headers say
// (an extra header cannot set the user or a group, and no other header
// lands in the extras). Run with
//
//	go test ./virtapi/frontproxy/ -run '^$' -fuzz FuzzFrontProxyHeaders -fuzztime 60s
func FuzzFrontProxyHeaders(f *testing.F) {
	ca, other := newCerts(f, "front-proxy-ca"), newCerts(f, "other-ca")
	fp := &Authenticator{ClientCA: ca.pool(), AllowedNames: []string{"front-proxy-client"}}
	peers := []*x509.Certificate{
		ca.client("front-proxy-client", x509.ExtKeyUsageClientAuth),
		ca.client("someone-else", x509.ExtKeyUsageClientAuth),
		other.client("front-proxy-client", x509.ExtKeyUsageClientAuth),
		ca.client("front-proxy-client", x509.ExtKeyUsageServerAuth),
	}
	f.Add(uint8(0), "X-Remote-User: alice\r\nX-Remote-Group: devs\r\nX-Remote-Group: system:authenticated\r\nX-Remote-Extra-Scopes: a\r\n")
	f.Add(uint8(0), "x-remote-user: alice\r\nX-Remote-Extra-Authentication.kubernetes.io%2fpod-name: p\r\nX-REMOTE-EXTRA-: nothing\r\n")
	f.Add(uint8(0), "X-Remote-Extra-X-Remote-User: root\r\nX-Remote-Extra-: x\r\nX-Remote-Group: system:masters\r\n")
	f.Add(uint8(0), "X-Remote-User: \r\nX-Remote-User: bob\r\n")
	f.Add(uint8(1), "X-Remote-User: system:admin\r\nX-Remote-Group: system:masters\r\n")
	f.Add(uint8(2), "X-Remote-User: system:admin\r\n")
	f.Add(uint8(3), "X-Remote-User: system:admin\r\n")
	f.Add(uint8(4), "X-Remote-User: system:admin\r\nX-Remote-Group: system:masters\r\n")
	f.Fuzz(func(t *testing.T, peer uint8, head string) {
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(
			"PUT /apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachines/vm1/start HTTP/1.1\r\nHost: virt-api\r\n" + head + "\r\n\r\n")))
		if err != nil {
			return
		}
		trusted := false
		switch i := int(peer) % (len(peers) + 1); i {
		case len(peers): // no TLS at all
		default:
			r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{peers[i]}}
			trusted = i == 0
		}
		u, err := fp.Authenticate(r)
		if !trusted {
			if err == nil || !cmp.Equal(u, User{}) {
				t.Fatalf("an untrusted caller got %+v (%v)", u, err)
			}
			return
		}
		name := ""
		if v := r.Header.Values("X-Remote-User"); len(v) > 0 {
			name = v[0]
		}
		if (err == nil) != (name != "") {
			t.Fatalf("user header %q: %+v, %v", name, u, err)
		}
		if err != nil {
			return
		}
		if u.Name != name {
			t.Errorf("user %q, want %q", u.Name, name)
		}
		if d := cmp.Diff(r.Header.Values("X-Remote-Group"), u.Groups, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("groups (-headers +user):\n%s", d)
		}
		var fromHeaders []string
		for k, vs := range r.Header {
			if len(k) > len("X-Remote-Extra-") && strings.EqualFold(k[:len("X-Remote-Extra-")], "X-Remote-Extra-") {
				fromHeaders = append(fromHeaders, vs...)
			}
		}
		var inExtras []string
		for _, vs := range u.Extra {
			inExtras = append(inExtras, vs...)
		}
		slices.Sort(fromHeaders)
		slices.Sort(inExtras)
		if d := cmp.Diff(fromHeaders, inExtras, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("extra values (-extra headers +user's extras):\n%s", d)
		}
	})
}
