package registry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/local/registry"
)

// start serves a registry on dir at addr ("" for a free port) until the
// test ends.
func start(t *testing.T, dir, addr string) *registry.Registry {
	t.Helper()
	if addr == "" {
		addr = fmt.Sprintf("127.0.0.1:%d", testenv.FreePorts(t, 1))
	}
	r, err := registry.Start(context.Background(), registry.Config{Dir: dir, Addr: addr, Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return r
}

func ref(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestPersists: what was pushed is served again by a registry started
// anew on the same folder, by tag and by digest, and the folder is an OCI
// image layout other tools read.
func TestPersists(t *testing.T) {
	dir := t.TempDir()
	r := start(t, dir, "")
	addr := r.Addr()
	img, err := random.Image(4096, 3)
	must(t, err)
	idx, err := random.Index(1024, 1, 2)
	must(t, err)
	must(t, remote.Write(ref(t, addr+"/vm/disk:v1"), img))
	must(t, remote.WriteIndex(ref(t, addr+"/multi/arch:v2"), idx))
	want, err := img.Digest()
	must(t, err)
	wantIdx, err := idx.Digest()
	must(t, err)
	must(t, r.Stop(context.Background()))

	if resp, err := http.Get("http://" + addr + "/v2/"); err == nil {
		resp.Body.Close()
		t.Fatal("the stopped registry still answers")
	}
	start(t, dir, addr)
	for _, s := range []string{addr + "/vm/disk:v1", addr + "/vm/disk@" + want.String()} {
		got, err := remote.Image(ref(t, s))
		if err != nil {
			t.Fatalf("%s after a restart: %v", s, err)
		}
		if err := validate.Image(got); err != nil {
			t.Errorf("%s after a restart: %v", s, err)
		}
		if d, _ := got.Digest(); d != want {
			t.Errorf("%s after a restart: digest %s, want %s", s, d, want)
		}
	}
	gotIdx, err := remote.Index(ref(t, addr+"/multi/arch:v2"))
	must(t, err)
	if err := validate.Index(gotIdx); err != nil {
		t.Errorf("the index after a restart: %v", err)
	}
	if d, _ := gotIdx.Digest(); d != wantIdx {
		t.Errorf("the index after a restart: digest %s, want %s", d, wantIdx)
	}
	repos, err := remote.Catalog(context.Background(), ref(t, addr+"/x:1").Context().Registry)
	must(t, err)
	if diff := cmp.Diff([]string{"multi/arch", "vm/disk"}, repos); diff != "" {
		t.Errorf("catalog (-want +got):\n%s", diff)
	}

	// The folder is an OCI image layout naming each manifest.
	l, err := layout.FromPath(dir)
	must(t, err)
	ii, err := l.ImageIndex()
	must(t, err)
	im, err := ii.IndexManifest()
	must(t, err)
	names := map[string]v1.Hash{}
	for _, d := range im.Manifests {
		names[d.Annotations["org.opencontainers.image.ref.name"]] = d.Digest
	}
	wantNames := map[string]v1.Hash{"vm/disk:v1": want, "multi/arch:v2": wantIdx}
	children, err := idx.IndexManifest()
	must(t, err)
	for _, c := range children.Manifests { // pushed by digest, before the index
		wantNames["multi/arch@"+c.Digest.String()] = c.Digest
	}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("index.json's ref names (-want +got):\n%s", diff)
	}
	fromLayout, err := l.Image(want)
	must(t, err)
	if err := validate.Image(fromLayout); err != nil {
		t.Errorf("the image read from the layout: %v", err)
	}
}

// TestTags: moving a tag keeps the manifest it named reachable by digest;
// deleting a tag keeps the manifest, deleting a digest removes it.
func TestTags(t *testing.T) {
	r := start(t, t.TempDir(), "")
	repo := r.Addr() + "/vm/disk"
	a, _ := random.Image(100, 1)
	b, _ := random.Image(100, 1)
	da, _ := a.Digest()
	db, _ := b.Digest()
	must(t, remote.Write(ref(t, repo+":t"), a))
	must(t, remote.Write(ref(t, repo+":t"), b))
	must(t, remote.Write(ref(t, repo+":other"), b))
	tags := func() []string {
		tags, err := remote.List(ref(t, repo+":t").Context())
		must(t, err)
		return tags
	}
	digestOf := func(s string) string {
		d, err := remote.Get(ref(t, s))
		if err != nil {
			return err.Error()
		}
		return d.Digest.String()
	}
	if diff := cmp.Diff([]string{"other", "t"}, tags()); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
	for s, want := range map[string]string{repo + ":t": db.String(), repo + "@" + da.String(): da.String()} {
		if got := digestOf(s); got != want {
			t.Errorf("%s: %s, want %s", s, got, want)
		}
	}

	must(t, remote.Delete(ref(t, repo+":t")))
	if diff := cmp.Diff([]string{"other"}, tags()); diff != "" {
		t.Errorf("tags after deleting t (-want +got):\n%s", diff)
	}
	must(t, remote.Delete(ref(t, repo+"@"+db.String())))
	for _, s := range []string{repo + ":other", repo + "@" + db.String()} {
		if got := digestOf(s); !strings.Contains(got, "MANIFEST_UNKNOWN") {
			t.Errorf("%s after deleting its digest: %s, want MANIFEST_UNKNOWN", s, got)
		}
	}
	if got := digestOf(repo + "@" + da.String()); got != da.String() {
		t.Errorf("the first manifest after the deletes: %s", got)
	}
}

// TestRefusals: requests the registry refuses, with the distribution
// API's status and error code.
func TestRefusals(t *testing.T) {
	r := start(t, t.TempDir(), "")
	img, _ := random.Image(100, 1)
	must(t, remote.Write(ref(t, r.Addr()+"/vm/disk:v1"), img))
	missing := "sha256:" + strings.Repeat("0", 64)
	for _, tc := range []struct {
		name, method, path, body, contentType string
		status                                int
		code                                  string
	}{
		{"unknown repository", "GET", "/v2/no/such/manifests/v1", "", "", 404, "NAME_UNKNOWN"},
		{"unknown tag", "GET", "/v2/vm/disk/manifests/v2", "", "", 404, "MANIFEST_UNKNOWN"},
		{"unknown digest", "HEAD", "/v2/vm/disk/manifests/" + missing, "", "", 404, ""},
		{"unknown blob", "GET", "/v2/vm/disk/blobs/" + missing, "", "", 404, "BLOB_UNKNOWN"},
		{"bad digest", "GET", "/v2/vm/disk/blobs/sha256:xyz", "", "", 400, "DIGEST_INVALID"},
		{"bad repository name", "GET", "/v2/VM/Disk/manifests/v1", "", "", 404, "NAME_INVALID"},
		{"bad tag", "GET", "/v2/vm/disk/manifests/.v1", "", "", 400, "TAG_INVALID"},
		{"manifest with a missing layer", "PUT", "/v2/vm/disk/manifests/v2",
			`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"` + missing + `","size":2},"layers":[]}`,
			"application/vnd.oci.image.manifest.v1+json", 400, "MANIFEST_BLOB_UNKNOWN"},
		{"manifest of another digest", "PUT", "/v2/vm/disk/manifests/" + missing, `{}`, "application/vnd.oci.image.manifest.v1+json", 400, "DIGEST_INVALID"},
		{"not a manifest", "PUT", "/v2/vm/disk/manifests/v3", `{"schemaVersion":1}`, "application/vnd.docker.distribution.manifest.v1+json", 400, "MANIFEST_INVALID"},
		{"not JSON", "PUT", "/v2/vm/disk/manifests/v3", `{`, "application/vnd.oci.image.manifest.v1+json", 400, "MANIFEST_INVALID"},
		{"blob of another digest", "POST", "/v2/vm/disk/blobs/uploads/?digest=" + missing, "data", "", 400, "DIGEST_INVALID"},
		{"unknown upload", "PATCH", "/v2/vm/disk/blobs/uploads/0123", "data", "", 404, "BLOB_UPLOAD_UNKNOWN"},
		{"deleting a blob", "DELETE", "/v2/vm/disk/blobs/" + missing, "", "", 405, "UNSUPPORTED"},
		{"deleting an unknown tag", "DELETE", "/v2/vm/disk/manifests/v9", "", "", 404, "MANIFEST_UNKNOWN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, code, _ := do(t, tc.method, "http://"+r.Addr()+tc.path, tc.body, map[string]string{"Content-Type": tc.contentType})
			if status != tc.status || code != tc.code {
				t.Errorf("%s %s = %d %q, want %d %q", tc.method, tc.path, status, code, tc.status, tc.code)
			}
		})
	}
}

// do sends a request and returns the status, the first error code and the
// response headers.
func do(t *testing.T, method, url, body string, headers map[string]string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	must(t, err)
	for k, v := range headers {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	var doc struct{ Errors []struct{ Code string } }
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &doc)
	code := ""
	if len(doc.Errors) > 0 {
		code = doc.Errors[0].Code
	}
	return resp.StatusCode, code, resp.Header
}

// TestChunkedUpload: a blob sent in chunks (as docker push does) is
// committed once its digest matches, and served with ranges.
func TestChunkedUpload(t *testing.T) {
	r := start(t, t.TempDir(), "")
	base := "http://" + r.Addr()
	content := "0123456789abcdefghij"
	digest, _, err := v1.SHA256(strings.NewReader(content))
	must(t, err)

	status, _, h := do(t, "POST", base+"/v2/vm/disk/blobs/uploads/", "", nil)
	loc := h.Get("Location")
	if status != http.StatusAccepted || loc == "" {
		t.Fatalf("POST uploads = %d, Location %q", status, loc)
	}
	status, _, h = do(t, "PATCH", base+loc, content[:10], map[string]string{"Content-Range": "0-9"})
	if status != http.StatusAccepted || h.Get("Range") != "0-9" {
		t.Fatalf("first chunk = %d, Range %q", status, h.Get("Range"))
	}
	status, code, _ := do(t, "PATCH", base+loc, content[10:], map[string]string{"Content-Range": "5-14"})
	if status != http.StatusRequestedRangeNotSatisfiable || code != "BLOB_UPLOAD_INVALID" {
		t.Errorf("a chunk that does not continue = %d %s", status, code)
	}
	status, _, h = do(t, "GET", base+loc, "", nil)
	if status != http.StatusNoContent || h.Get("Range") != "0-9" {
		t.Errorf("upload status = %d, Range %q", status, h.Get("Range"))
	}
	status, _, _ = do(t, "PATCH", base+loc, content[10:15], map[string]string{"Content-Range": "10-14"})
	if status != http.StatusAccepted {
		t.Fatalf("second chunk = %d", status)
	}
	status, _, h = do(t, "PUT", base+loc+"?digest="+digest.String(), content[15:], nil)
	if status != http.StatusCreated || h.Get("Docker-Content-Digest") != digest.String() {
		t.Fatalf("PUT = %d, digest %q", status, h.Get("Docker-Content-Digest"))
	}
	if status, code, _ := do(t, "PATCH", base+loc, "more", nil); status != http.StatusNotFound || code != "BLOB_UPLOAD_UNKNOWN" {
		t.Errorf("PATCH after the upload ended = %d %s", status, code)
	}

	req, _ := http.NewRequest("GET", base+"/v2/vm/disk/blobs/"+digest.String(), nil)
	req.Header.Set("Range", "bytes=5-9")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent || string(b) != "56789" {
		t.Errorf("ranged GET = %d %q", resp.StatusCode, b)
	}
	// A mount of a blob the registry has is answered at once.
	status, _, h = do(t, "POST", base+"/v2/other/repo/blobs/uploads/?mount="+digest.String()+"&from=vm/disk", "", nil)
	if status != http.StatusCreated || h.Get("Docker-Content-Digest") != digest.String() {
		t.Errorf("mount = %d, digest %q", status, h.Get("Docker-Content-Digest"))
	}
	// No unfinished upload is left behind in the folder.
	entries, err := os.ReadDir(filepath.Join(r.Config().Dir, "uploads"))
	must(t, err)
	if len(entries) != 0 {
		t.Errorf("uploads/ holds %d files after the uploads ended", len(entries))
	}
}

func TestConfigErrors(t *testing.T) {
	busy := start(t, t.TempDir(), "")
	for _, tc := range []struct {
		name string
		cfg  registry.Config
		want string
	}{
		{"no folder", registry.Config{Addr: "127.0.0.1:0"}, "Config.Dir: required"},
		{"not loopback", registry.Config{Dir: t.TempDir(), Addr: "0.0.0.0:5000"}, "not a loopback address"},
		{"no port", registry.Config{Dir: t.TempDir(), Addr: "127.0.0.1"}, "Config.Addr"},
		{"port taken", registry.Config{Dir: t.TempDir(), Addr: busy.Addr()}, "listen on " + busy.Addr()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := registry.Start(context.Background(), tc.cfg)
			if err == nil {
				_ = r.Stop(context.Background())
				t.Fatalf("Start succeeded, want an error with %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Start: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestStopWaits: Stop lets a request in progress finish, and cuts it when
// its context ends.
func TestStopWaits(t *testing.T) {
	r := start(t, t.TempDir(), "")
	base := "http://" + r.Addr()
	_, _, h := do(t, "POST", base+"/v2/vm/disk/blobs/uploads/", "", nil)
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("PATCH", base+h.Get("Location"), pr)
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	_, _ = pw.Write([]byte("partial"))
	// The request is in the handler once the chunk is in the upload's file.
	files, _ := filepath.Glob(filepath.Join(r.Config().Dir, "uploads", "*"))
	testenv.EventuallyEvery(testenv.Within(t, 5*time.Second), t, 10*time.Millisecond, "the chunk in the upload's file", func() (bool, string) {
		st, err := os.Stat(files[0])
		return err == nil && st.Size() == int64(len("partial")), fmt.Sprintf("%v %v", st, err)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	if err := r.Stop(ctx); err == nil {
		t.Errorf("Stop with a request hanging = nil, want an error")
	}
	if d := time.Since(t0); d < 250*time.Millisecond || d > 5*time.Second {
		t.Errorf("Stop returned after %s, want about the context's 300ms", d)
	}
	pw.Close()
	<-done
}
