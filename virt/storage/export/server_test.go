package export_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/virtkit/virtkit/virt/storage/export"
	exporttoken "github.com/virtkit/virtkit/virt/storage/export/token"
	"github.com/virtkit/virtkit/virt/storage/upload"
)

const token = "s3cretT0kenABCDEFGHI"

// served is a running export server over real HTTPS, with a disk image
// volume "disk" and a file system volume "files".
type served struct {
	base   string
	client *http.Client
	dir    string // the test's folder: volumes, token, certificate
	image  []byte
	outer  string // a file outside every volume
}

func serve(t *testing.T, opts ...export.Option) *served {
	t.Helper()
	dir := t.TempDir()
	s := &served{dir: dir, outer: filepath.Join(dir, "outside-secret")}
	write(t, s.outer, "node secret")
	// The disk: 3 MiB, mostly zeros, some data.
	s.image = make([]byte, 3<<20)
	copy(s.image[1<<20:], "VIRTKIT-DISK-MARKER")
	write(t, filepath.Join(dir, "disk", "disk.img"), string(s.image))
	// The file system claim: files, a folder, lost+found, a link out and a FIFO.
	write(t, filepath.Join(dir, "files", "a.txt"), "alpha")
	write(t, filepath.Join(dir, "files", "sub", "b.txt"), "beta")
	if err := os.MkdirAll(filepath.Join(dir, "files", "lost+found"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(s.outer, filepath.Join(dir, "files", "escape")); err != nil {
		t.Fatal(err)
	}
	// A claim whose disk.img is a link to the node's file.
	if err := os.MkdirAll(filepath.Join(dir, "evil"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(s.outer, filepath.Join(dir, "evil", "disk.img")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "token"), token)
	certPEM, keyPEM, err := upload.NewServerCert("export.test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "tls.crt"), string(certPEM))
	write(t, filepath.Join(dir, "tls.key"), string(keyPEM))

	cfg := export.Config{
		Export: "my-export", CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"),
		TokenFile: filepath.Join(dir, "token"),
		Volumes: []export.Volume{
			{Claim: "disk", Path: filepath.Join(dir, "disk"), Content: export.DiskImage},
			{Claim: "files", Path: filepath.Join(dir, "files"), Content: export.Archive},
			{Claim: "evil", Path: filepath.Join(dir, "evil"), Content: export.DiskImage},
		},
	}
	srv, err := export.NewServer(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	s.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "export.test"}}}
	s.base = "https://" + ln.Addr().String()
	return s
}

func write(t *testing.T, name, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// get requests path with the token in the header (tok != "") and returns
// the status and the body.
func (s *served) get(t *testing.T, method, path, tok string, header ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set(exporttoken.Header, tok)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: body: %v", method, path, err)
	}
	return resp.StatusCode, resp.Header, b
}

func TestServerNeedsTheToken(t *testing.T) {
	s := serve(t)
	if code, _, b := s.get(t, http.MethodGet, export.ReadyPath, ""); code != http.StatusOK || string(b) != "OK" {
		t.Errorf("readiness without a token: %d %q, want 200 OK", code, b)
	}
	for _, p := range []string{export.RawPath("disk"), export.GzipPath("disk"), export.DirPath("files") + "/a.txt",
		export.ArchivePath("files"), export.ManifestPath(export.Internal, "auth-header-secret")} {
		for _, tok := range []string{"", "wrong", token + "x"} {
			if code, _, b := s.get(t, http.MethodGet, p, tok); code != http.StatusUnauthorized || len(b) != 0 {
				t.Errorf("GET %s with token %q: %d %q, want 401 and no body", p, tok, code, b)
			}
		}
	}
	// In the query parameter, as KubeVirt's server takes it too.
	if code, _, _ := s.get(t, http.MethodGet, export.RawPath("disk")+"?"+exporttoken.Header+"="+token, ""); code != http.StatusOK {
		t.Errorf("token in the query: %d, want 200", code)
	}
	// A rotated token applies at once.
	write(t, filepath.Join(s.dir, "token"), "rotated")
	if code, _, _ := s.get(t, http.MethodGet, export.RawPath("disk"), token); code != http.StatusUnauthorized {
		t.Errorf("the old token after rotation: %d, want 401", code)
	}
	if code, _, _ := s.get(t, http.MethodGet, export.RawPath("disk"), "rotated"); code != http.StatusOK {
		t.Errorf("the new token: %d, want 200", code)
	}
}

func TestServerServesADiskImage(t *testing.T) {
	s := serve(t)
	code, h, b := s.get(t, http.MethodGet, export.RawPath("disk"), token)
	if code != http.StatusOK || !bytes.Equal(b, s.image) || h.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("raw: %d, %d bytes (%s), want 200 and the %d-byte image", code, len(b), h.Get("Content-Type"), len(s.image))
	}
	code, _, b = s.get(t, http.MethodGet, export.RawPath("disk"), token, "Range", "bytes=1048576-1048594")
	if code != http.StatusPartialContent || string(b) != "VIRTKIT-DISK-MARKER" {
		t.Errorf("raw range: %d %q, want 206 and the marker", code, b)
	}
	if code, h, _ := s.get(t, http.MethodHead, export.RawPath("disk"), token); code != http.StatusOK || h.Get("Content-Length") != "3145728" {
		t.Errorf("raw HEAD: %d, length %s; want 200, 3145728", code, h.Get("Content-Length"))
	}
	code, h, b = s.get(t, http.MethodGet, export.GzipPath("disk"), token)
	if code != http.StatusOK || h.Get("Content-Type") != "application/x-gzip" {
		t.Fatalf("gzip: %d (%s), want 200 application/x-gzip", code, h.Get("Content-Type"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(plain, s.image) {
		t.Errorf("gzip decompresses to %d bytes (%v), want the %d-byte image", len(plain), err, len(s.image))
	}
	if len(b) > len(s.image)/100 {
		t.Errorf("gzip of a mostly-zero image is %d bytes, want it compressed", len(b))
	}
	for _, m := range []string{http.MethodPost, http.MethodHead} {
		if code, _, _ := s.get(t, m, export.GzipPath("disk"), token); code != http.StatusMethodNotAllowed {
			t.Errorf("%s gzip: %d, want 405", m, code)
		}
	}
	if code, _, _ := s.get(t, http.MethodPut, export.RawPath("disk"), token); code != http.StatusMethodNotAllowed {
		t.Errorf("PUT raw: %d, want 405", code)
	}
}

// A claim's content is the user's: a link never leads the server out.
func TestServerFollowsNoLink(t *testing.T) {
	s := serve(t)
	for _, p := range []string{export.RawPath("evil"), export.GzipPath("evil"), export.DirPath("files") + "/escape"} {
		code, _, b := s.get(t, http.MethodGet, p, token)
		if code != http.StatusNotFound || strings.Contains(string(b), "node secret") {
			t.Errorf("GET %s: %d (%d bytes), want 404 and nothing of the linked file", p, code, len(b))
		}
	}
	for _, p := range []string{"/volumes/../token", "/volumes/files/dir/../../../token", "/volumes/files/dir/%2e%2e/%2e%2e/%2e%2e/token", "/volumes/other/disk.img"} {
		if code, _, b := s.get(t, http.MethodGet, p, token); code != http.StatusNotFound {
			t.Errorf("GET %s: %d (%d bytes), want 404", p, code, len(b))
		}
	}
}

func TestServerServesAFileSystem(t *testing.T) {
	s := serve(t)
	if code, _, b := s.get(t, http.MethodGet, export.DirPath("files")+"/sub/b.txt", token); code != http.StatusOK || string(b) != "beta" {
		t.Errorf("dir file: %d %q, want 200 beta", code, b)
	}
	code, _, b := s.get(t, http.MethodGet, export.DirPath("files")+"/", token)
	if code != http.StatusOK || !strings.Contains(string(b), "a.txt") || !strings.Contains(string(b), "sub/") {
		t.Errorf("dir listing: %d %q, want a.txt and sub/", code, b)
	}
	// The link KubeVirt lists has no trailing slash: it is redirected.
	if code, _, b := s.get(t, http.MethodGet, export.DirPath("files"), token); code != http.StatusOK || !strings.Contains(string(b), "a.txt") {
		t.Errorf("dir link without the slash: %d %q, want the listing", code, b)
	}
	code, _, b = s.get(t, http.MethodGet, export.ArchivePath("files"), token)
	if code != http.StatusOK {
		t.Fatalf("tar.gz: %d", code)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		got[h.Name] = string(data)
	}
	want := map[string]string{"a.txt": "alpha", "sub/": "", "sub/b.txt": "beta"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("tar.gz entries (-want +got), without lost+found and the link:\n%s", d)
	}
}

func TestServerHeaderSecretManifest(t *testing.T) {
	s := serve(t)
	code, _, b := s.get(t, http.MethodGet, export.ManifestPath(export.External, "auth-header-secret"), token)
	if code != http.StatusOK {
		t.Fatalf("secret manifest: %d", code)
	}
	var list struct {
		Kind  string          `json:"kind"`
		Items []corev1.Secret `json:"items"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatalf("secret manifest %q: %v", b, err)
	}
	if list.Kind != "List" || len(list.Items) != 1 || list.Items[0].Name != "header-secret-my-export" ||
		list.Items[0].StringData["token"] != "x-kubevirt-export-token:"+token {
		t.Errorf("secret manifest: %s", b)
	}
	code, h, b := s.get(t, http.MethodGet, export.ManifestPath(export.Internal, "auth-header-secret"), token, "Accept", "application/yaml")
	if code != http.StatusOK || h.Get("Content-Type") != "application/yaml" || !strings.HasSuffix(string(b), "---\n") ||
		!strings.Contains(string(b), "token: x-kubevirt-export-token:"+token) {
		t.Errorf("secret manifest as YAML: %d %q", code, b)
	}
}

func TestServerStopsAtTheDeadline(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM, err := upload.NewServerCert("export.test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "tls.crt"), string(certPEM))
	write(t, filepath.Join(dir, "tls.key"), string(keyPEM))
	write(t, filepath.Join(dir, "token"), token)
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)
	srv, err := export.NewServer(export.Config{Export: "e", CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"),
		TokenFile: filepath.Join(dir, "token"), Deadline: now.Add(time.Hour)}, export.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), ln, time.Second) }()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("Serve returned before the deadline: %v", err)
	default:
	}
	clk.Step(time.Hour)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve at the deadline: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop at its deadline")
	}
}

func TestConfigEnvRoundTrip(t *testing.T) {
	in := export.Config{Export: "e", CertFile: "/cert/tls.crt", KeyFile: "/cert/tls.key", TokenFile: "/token/token",
		Deadline: time.Date(2026, 12, 6, 14, 0, 0, 0, time.UTC),
		Volumes: []export.Volume{{Claim: "disk", Path: "/export-volumes/disk", Content: export.DiskImage},
			{Claim: "blk", Path: "/dev/export-volumes/blk", Block: true, Content: export.DiskImage}}}
	env, err := in.Env()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, kv := range env {
		m[kv[0]] = kv[1]
	}
	out, err := export.ConfigFromEnv(func(k string) (string, bool) { v, ok := m[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(in, out); d != "" {
		t.Errorf("round trip (-in +out):\n%s", d)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := export.Config{Export: "e", CertFile: "c", KeyFile: "k", TokenFile: "t"}
	for _, tc := range []struct {
		name string
		vols []export.Volume
		want []string
	}{
		{name: "a slash in a claim", vols: []export.Volume{{Claim: "a/b", Path: "/x", Content: export.DiskImage}}, want: []string{`volume "a/b": claim: not a claim's name`}},
		{name: "dot-dot claim", vols: []export.Volume{{Claim: "..", Path: "/x", Content: export.DiskImage}}, want: []string{`volume "..": claim`}},
		{name: "relative path", vols: []export.Volume{{Claim: "a", Path: "x", Content: export.DiskImage}}, want: []string{`volume a: path "x": must be absolute`}},
		{name: "unknown content", vols: []export.Volume{{Claim: "a", Path: "/x", Content: "iso"}}, want: []string{`volume a: content "iso"`}},
		{name: "block archive", vols: []export.Volume{{Claim: "a", Path: "/x", Block: true, Content: export.Archive}}, want: []string{"a block volume holds a disk image"}},
		{name: "twice", vols: []export.Volume{{Claim: "a", Path: "/x", Content: export.DiskImage}, {Claim: "a", Path: "/y", Content: export.DiskImage}}, want: []string{"volume a: served twice"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			c.Volumes = tc.vols
			err := c.Validate()
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("Validate: %v, want it to say %q", err, w)
				}
			}
		})
	}
	err := export.Config{}.Validate()
	var names []string
	for _, n := range []string{"EXPORT_NAME", "CERT_FILE", "KEY_FILE", "TOKEN_FILE"} {
		if err == nil || !strings.Contains(err.Error(), n+": required") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	if len(names) > 0 {
		t.Errorf("an empty Config: %v, want it to name %v as required", err, names)
	}
}

func TestBlockVolumeMustBeABlockDevice(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "token"), token)
	srv, err := export.NewServer(export.Config{Export: "e", CertFile: "c", KeyFile: "k", TokenFile: filepath.Join(dir, "token"),
		Volumes: []export.Volume{{Claim: "null", Path: "/dev/null", Block: true, Content: export.DiskImage}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rec := newRecorder()
	req, _ := http.NewRequest(http.MethodGet, export.RawPath("null"), nil)
	req.Header.Set(exporttoken.Header, token)
	srv.ServeHTTP(rec, req)
	if rec.code != http.StatusInternalServerError {
		t.Errorf("a character device as a Block volume: %d, want 500", rec.code)
	}
}

// recorder is the least http.ResponseWriter.
type recorder struct {
	code int
	h    http.Header
	body bytes.Buffer
}

func newRecorder() *recorder                    { return &recorder{code: http.StatusOK, h: http.Header{}} }
func (r *recorder) Header() http.Header         { return r.h }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(code int)        { r.code = code }
