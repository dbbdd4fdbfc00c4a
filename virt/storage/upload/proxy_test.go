package upload_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/virtkit/virtkit/virt/storage/upload"
)

// clientPKI is a CA and a client certificate it signed for cn.
func clientPKI(t *testing.T, cn string) (*x509.CertPool, tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// backends is a Backends of one claim, or an error.
type backends struct {
	be  upload.Backend
	err error
}

func (b backends) Backend(_ context.Context, ns, claim string) (upload.Backend, error) {
	if b.err != nil {
		return upload.Backend{}, b.err
	}
	if ns != "ns" || claim != "disk" {
		return upload.Backend{}, fmt.Errorf("claim %s/%s: %w", ns, claim, upload.ErrNoUpload)
	}
	return b.be, nil
}

// rig is a proxy in front of an upload server storing into got.
type rig struct {
	proxy *httptest.Server
	srv   *upload.Server
	key   crypto.Signer
	got   chan string
}

func newRig(t *testing.T, clientCN string, sinkErr error, beErr error, pinOther bool) *rig {
	t.Helper()
	pool, clientCert := clientPKI(t, clientCN)
	r := &rig{got: make(chan string, 4)}
	r.srv = upload.NewServer(func(_ context.Context, req *http.Request) error {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return err
		}
		r.got <- string(b)
		return sinkErr
	}, func(err error) bool { return strings.Contains(err.Error(), "retry") }, "virtkit-upload-proxy")
	certPEM, keyPEM, err := upload.NewServerCert("cdi-upload-disk", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	serving, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	backend := httptest.NewUnstartedServer(r.srv)
	backend.TLS = upload.ServerTLS(serving, pool)
	backend.StartTLS()
	t.Cleanup(backend.Close)
	if pinOther {
		// The proxy expects another certificate than the server has.
		certPEM, _, _ = upload.NewServerCert("cdi-upload-disk", time.Now())
	}
	pinned, err := upload.PinnedTLS(&tls.Config{Certificates: []tls.Certificate{clientCert}}, certPEM)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(backend.URL)
	be := upload.Backend{URL: u, TLS: pinned}
	r.key, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p := upload.NewProxy(func() (crypto.PublicKey, error) { return r.key.Public(), nil }, backends{be: be, err: beErr})
	r.proxy = httptest.NewTLSServer(p)
	t.Cleanup(r.proxy.Close)
	return r
}

func (r *rig) post(t *testing.T, claim, body string, expires time.Duration) (int, string) {
	t.Helper()
	return r.postTo(t, upload.Path, claim, "", strings.NewReader(body), expires)
}

// postTo posts body of content type typ ("" none) to path with a token
// for claim.
func (r *rig) postTo(t *testing.T, path, claim, typ string, body io.Reader, expires time.Duration) (int, string) {
	t.Helper()
	tok, err := upload.Issue(r.key, upload.Claims{Namespace: "ns", Claim: claim, Expires: time.Now().Add(expires)})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, r.proxy.URL+path, body)
	req.Header.Set("Authorization", "Bearer "+tok)
	if typ != "" {
		req.Header.Set("Content-Type", typ)
	}
	resp, err := r.proxy.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(msg)
}

func TestProxyStreamsToServer(t *testing.T) {
	r := newRig(t, "virtkit-upload-proxy", nil, nil, false)
	if code, msg := r.post(t, "disk", "image bytes", time.Minute); code != http.StatusOK {
		t.Fatalf("upload: %d %s", code, msg)
	}
	if got := <-r.got; got != "image bytes" {
		t.Errorf("stored %q, want %q", got, "image bytes")
	}
	select {
	case <-r.srv.Done():
	default:
		t.Error("Done not closed after a stored upload")
	}
	if code, msg := r.post(t, "disk", "again", time.Minute); code != http.StatusConflict {
		t.Errorf("second upload: %d %s, want 409", code, msg)
	}
}

// TestProxyPaths: the asynchronous path takes the body as the image, the
// form paths the part "file" of a multipart form (the parts before it
// skipped), each answered once it is stored; a form without that part is
// refused.
func TestProxyPaths(t *testing.T) {
	form := func(t *testing.T, parts map[string]string, order ...string) (string, io.Reader) {
		t.Helper()
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		for _, name := range order {
			var (
				pw  io.Writer
				err error
			)
			if name == "file" {
				pw, err = w.CreateFormFile(name, "disk.img")
			} else {
				pw, err = w.CreateFormField(name)
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pw.Write([]byte(parts[name])); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return w.FormDataContentType(), &b
	}
	for _, path := range []string{upload.PathAsync, "/v1alpha1/upload"} {
		r := newRig(t, "virtkit-upload-proxy", nil, nil, false)
		if code, msg := r.postTo(t, path, "disk", "", strings.NewReader("image bytes"), time.Minute); code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, code, msg)
		}
		if got := <-r.got; got != "image bytes" {
			t.Errorf("%s: stored %q", path, got)
		}
	}
	for _, path := range []string{upload.PathForm, upload.PathFormAsync} {
		r := newRig(t, "virtkit-upload-proxy", nil, nil, false)
		typ, body := form(t, map[string]string{"name": "ignored", "file": "form bytes"}, "name", "file")
		if code, msg := r.postTo(t, path, "disk", typ, body, time.Minute); code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, code, msg)
		}
		if got := <-r.got; got != "form bytes" {
			t.Errorf("%s: stored %q, want the file part", path, got)
		}
	}
	r := newRig(t, "virtkit-upload-proxy", nil, nil, false)
	typ, body := form(t, map[string]string{"image": "x"}, "image")
	if code, msg := r.postTo(t, upload.PathForm, "disk", typ, body, time.Minute); code != http.StatusBadRequest || !strings.Contains(msg, `part "file"`) {
		t.Errorf("a form without a file part: %d %s, want 400 naming the part", code, msg)
	}
	if code, msg := r.postTo(t, upload.PathForm, "disk", "", strings.NewReader("not a form"), time.Minute); code != http.StatusBadRequest {
		t.Errorf("a form upload that is no form: %d %s, want 400", code, msg)
	}
}

func TestProxyRefuses(t *testing.T) {
	for _, tc := range []struct {
		name             string
		clientCN         string
		sinkErr, beErr   error
		claim            string
		expires          time.Duration
		wantCode         int
		wantMsg          string
		wantStoredAnyway bool
		pinOther         bool
	}{
		{name: "impostor server", pinOther: true, claim: "disk", expires: time.Minute, wantCode: 502, wantMsg: "other than the one its pod was made with"},
		{name: "expired token", claim: "disk", expires: -time.Second, wantCode: 401, wantMsg: "expired"},
		{name: "unknown claim", claim: "other", expires: time.Minute, wantCode: 404, wantMsg: "no upload expected"},
		{name: "not ready", beErr: fmt.Errorf("pod pending: %w", upload.ErrNotReady), claim: "disk", expires: time.Minute, wantCode: 503, wantMsg: "pod pending"},
		{name: "wrong client", clientCN: "someone", claim: "disk", expires: time.Minute, wantCode: 403, wantMsg: `client "someone" may not upload`},
		{name: "corrupt image", sinkErr: errors.New("corrupt image"), claim: "disk", expires: time.Minute, wantCode: 400, wantMsg: "corrupt image", wantStoredAnyway: true},
		{name: "broken stream", sinkErr: errors.New("retry: reset"), claim: "disk", expires: time.Minute, wantCode: 503, wantMsg: "retry: reset", wantStoredAnyway: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cn := tc.clientCN
			if cn == "" {
				cn = "virtkit-upload-proxy"
			}
			r := newRig(t, cn, tc.sinkErr, tc.beErr, tc.pinOther)
			code, msg := r.post(t, tc.claim, "x", tc.expires)
			if code != tc.wantCode || !strings.Contains(msg, tc.wantMsg) {
				t.Fatalf("upload: %d %q, want %d saying %q", code, msg, tc.wantCode, tc.wantMsg)
			}
			if tc.wantStoredAnyway {
				<-r.got
				select {
				case <-r.srv.Done():
					t.Error("Done closed after a failed upload")
				default:
				}
			}
		})
	}
}

func TestProxyNeedsBearerToken(t *testing.T) {
	r := newRig(t, "virtkit-upload-proxy", nil, nil, false)
	resp, err := r.proxy.Client().Post(r.proxy.URL+upload.Path, "application/octet-stream", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", resp.StatusCode)
	}
	head, _ := http.NewRequest(http.MethodHead, r.proxy.URL+upload.Path, nil)
	resp, err = r.proxy.Client().Do(head)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("HEAD: %d, want 405", resp.StatusCode)
	}
}
