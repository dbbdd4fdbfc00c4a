package subresources

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

// FuzzFrontProxyHeaders reads arbitrary request heads, as they arrive on
// the wire, through the front-proxy authenticator. Whatever the headers, a
// request without the aggregator's certificate gets no identity; with it,
// the user, groups and extras are exactly what the identity headers say
// (an extra header cannot set the user or a group, and no other header
// lands in the extras). Run with
//
//	go test ./virtapi/subresources/ -run '^$' -fuzz FuzzFrontProxyHeaders -fuzztime 60s
func FuzzFrontProxyHeaders(f *testing.F) {
	ca, other := newCerts(f, "front-proxy-ca"), newCerts(f, "other-ca")
	fp := &FrontProxy{ClientCA: ca.pool(), AllowedNames: []string{"front-proxy-client"}}
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

// FuzzBodies feeds arbitrary bodies to the decoding of every subresource
// that reads one, as the verbs do. Whatever the body, a refusal is a 400
// that virtctl shows, never another status; an accepted dry run is exactly
// [All]; an accepted addvolume names its volume and disk alike and marks
// its one source hotpluggable; an accepted removevolume names its volume;
// nothing over the body bound is accepted. Run with
//
//	go test ./virtapi/subresources/ -run '^$' -fuzz FuzzBodies -fuzztime 60s
func FuzzBodies(f *testing.F) {
	for i, b := range []string{
		`{}`, `{"paused":true,"dryRun":["All"]}`, `{"gracePeriod":0}`, `{"gracePeriodSeconds":-1}`,
		`{"addedNodeSelector":{"kubernetes.io/hostname":"node-b"}}`, `{"dryRun":["All","All"]}`, `{}`,
		`{"name":"data","disk":{"disk":{"bus":"scsi"}},"volumeSource":{"persistentVolumeClaim":{"claimName":"data"}}}`,
		`{"name":"data"}`,
		"name: data\ndisk:\n  disk: {}\nvolumeSource:\n  dataVolume:\n    name: dv\n",
		`{"name":"data","disk":{},"volumeSource":{"persistentVolumeClaim":{"claimName":"d"},"dataVolume":{"name":"dv"}}}`,
	} {
		f.Add(uint8(i), []byte(b))
	}
	f.Add(uint8(7), bytes.Repeat([]byte(" "), maxBody+2))
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		r := httptest.NewRequest(http.MethodPut, "/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachines/vm1/x", bytes.NewReader(body))
		req := &request{w: httptest.NewRecorder(), r: r, namespace: "default", name: "vm1"}
		var (
			start   virtv1.StartOptions
			stop    virtv1.StopOptions
			restart virtv1.RestartOptions
			migrate virtv1.MigrateOptions
			pause   virtv1.PauseOptions
			unpause virtv1.UnpauseOptions
		)
		verbs := []struct {
			opts any
			dry  *[]string
			what string
		}{
			{&start, &start.DryRun, "v1.StartOptions"}, {&stop, &stop.DryRun, "v1.StopOptions"},
			{&restart, &restart.DryRun, "v1.RestartOptions"}, {&migrate, &migrate.DryRun, "v1.MigrateOptions"},
			{&pause, &pause.DryRun, "v1.PauseOptions"}, {&unpause, &unpause.DryRun, "v1.UnpauseOptions"},
		}
		var (
			dry     bool
			err     error
			dryList []string
		)
		if k := int(kind % 9); k < len(verbs) {
			v := verbs[k]
			dry, err = mustDecode(req, v.opts, v.dry, v.what, "{}")
			dryList = *v.dry
		} else {
			var vr volumeRequest
			vr, dry, err = decodeVolumeRequest(req, k != 8)
			if err == nil {
				dryList = checkVolumeRequest(t, vr)
			}
		}
		if err != nil {
			if !apierrors.IsBadRequest(err) {
				t.Fatalf("refused with %v, want a 400", err)
			}
			return
		}
		if len(body) > maxBody {
			t.Fatalf("accepted a %d-byte body", len(body))
		}
		if dry != (len(dryList) > 0) || (dry && !slices.Equal(dryList, []string{metav1.DryRunAll})) {
			t.Errorf("dry run %t from dryRun %q", dry, dryList)
		}
	})
}

// checkVolumeRequest checks an accepted volume request and returns its
// dryRun list.
func checkVolumeRequest(t *testing.T, vr volumeRequest) []string {
	t.Helper()
	if (vr.add == nil) == (vr.remove == nil) {
		t.Fatalf("volume request with add %v and remove %v", vr.add, vr.remove)
	}
	if vr.remove != nil {
		if vr.remove.Name == "" {
			t.Error("removevolume accepted without a name")
		}
		return vr.remove.DryRun
	}
	o := vr.add
	if o.Name == "" || o.Disk == nil || o.Disk.Name != o.Name || o.VolumeSource == nil {
		t.Fatalf("addvolume accepted as %+v", o)
	}
	pvc, dv := o.VolumeSource.PersistentVolumeClaim, o.VolumeSource.DataVolume
	switch {
	case dv != nil && !dv.Hotpluggable, dv == nil && (pvc == nil || !pvc.Hotpluggable):
		t.Errorf("addvolume source not marked hotpluggable: %+v", o.VolumeSource)
	}
	return o.DryRun
}
