package importer_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/virtkit/virtkit/virt/storage/importer"
)

const (
	regUser = "puller"
	regPass = "s3cret-pass"
)

// testRegistry is an in-memory registry over TLS (or plain HTTP) that asks
// for basic auth and can corrupt the blobs it serves.
type testRegistry struct {
	srv     *httptest.Server
	host    string // host:port
	caPEM   []byte
	corrupt atomic.Bool
	// stall makes blob responses send half their bytes, then nothing
	// until the client gives up.
	stall atomic.Bool
}

func startRegistry(t *testing.T, plain bool) *testRegistry {
	t.Helper()
	r := &testRegistry{}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if u, p, ok := req.BasicAuth(); !ok || u != regUser || p != regPass {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "credentials, please", http.StatusUnauthorized)
			return
		}
		if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/") && r.stall.Load() {
			rec := httptest.NewRecorder()
			inner.ServeHTTP(rec, req)
			b := rec.Body.Bytes()
			w.Header().Set("Content-Length", strconv.Itoa(len(b)))
			w.WriteHeader(rec.Code)
			_, _ = w.Write(b[:len(b)/2])
			w.(http.Flusher).Flush()
			<-req.Context().Done()
			return
		}
		if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/") && r.corrupt.Load() {
			rec := httptest.NewRecorder()
			inner.ServeHTTP(rec, req)
			b := rec.Body.Bytes()
			if len(b) > 0 {
				b[len(b)/2] ^= 0xff
			}
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(b)
			return
		}
		inner.ServeHTTP(w, req)
	})
	if plain {
		r.srv = httptest.NewServer(h)
	} else {
		r.srv = httptest.NewTLSServer(h)
		r.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
	}
	t.Cleanup(r.srv.Close)
	r.host = strings.TrimPrefix(strings.TrimPrefix(r.srv.URL, "https://"), "http://")
	return r
}

// push writes img (or an index) as repo:tag.
func (r *testRegistry) push(t *testing.T, repo string, img any) string {
	t.Helper()
	ref, err := name.ParseReference(r.host+"/"+repo, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	opts := []remote.Option{remote.WithAuth(&authn.Basic{Username: regUser, Password: regPass}), remote.WithTransport(r.srv.Client().Transport)}
	switch x := img.(type) {
	case v1.Image:
		err = remote.Write(ref, x, opts...)
	case v1.ImageIndex:
		err = remote.WriteIndex(ref, x, opts...)
	}
	if err != nil {
		t.Fatal(err)
	}
	return ref.String()
}

// entry is a tar member: a regular file unless link is set.
type entry struct {
	name, link string
	data       []byte
	dir        bool
}

func layer(t *testing.T, entries ...entry) v1.Layer {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), Typeflag: tar.TypeReg}
		switch {
		case e.dir:
			hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeDir, 0o755, 0
		case e.link != "":
			hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeSymlink, e.link, 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func image(t *testing.T, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func read(t *testing.T, src importer.Source) ([]byte, int64, error) {
	t.Helper()
	rc, size, err := src.Open(context.Background())
	if err != nil {
		return nil, 0, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	return b, size, err
}

func TestRegistrySource(t *testing.T) {
	reg := startRegistry(t, false)
	disk := bytes.Repeat([]byte("virtkit disk "), 100_000)
	// The base layer has the folder, a link and a hidden whiteout under it
	// (not disks); the disk comes in the second, named ./disk/...; a later
	// layer's file is not taken.
	containerDisk := reg.push(t, "guest:v1", image(t,
		layer(t, entry{name: "disk/", dir: true}, entry{name: "disk/link.img", link: "/etc/passwd"}, entry{name: "disk/.wh.old.img"}, entry{name: "etc/hostname", data: []byte("x")}),
		layer(t, entry{name: "./disk/disk.qcow2", data: disk}),
		layer(t, entry{name: "disk/later.img", data: []byte("later")}),
	))
	noDisk := reg.push(t, "app:v1", image(t, layer(t, entry{name: "bin/app", data: []byte("app")})))
	armDisk, amdDisk := []byte("arm64 disk"), []byte("amd64 disk")
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: image(t, layer(t, entry{name: "disk/d.img", data: amdDisk})), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: image(t, layer(t, entry{name: "disk/d.img", data: armDisk})), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
	)
	multi := reg.push(t, "multi:v1", idx)

	ok := importer.RegistrySource{Image: containerDisk, CABundle: reg.caPEM, Username: regUser, Password: regPass}
	got, size, err := read(t, ok)
	if err != nil || size != int64(len(disk)) || !bytes.Equal(got, disk) {
		t.Fatalf("the containerDisk: %d bytes (size %d), %v; want the %d bytes of its disk", len(got), size, err, len(disk))
	}
	if s := ok.String(); s != "docker://"+containerDisk || strings.Contains(s, regPass) {
		t.Errorf("String() = %q", s)
	}

	arm := ok
	arm.Image, arm.Architecture = multi, "arm64"
	if got, _, err := read(t, arm); err != nil || !bytes.Equal(got, armDisk) {
		t.Errorf("an index for arm64: %q, %v; want the arm64 image's disk", got, err)
	}

	for _, tc := range []struct {
		name string
		src  importer.RegistrySource
		want importer.Reason
		in   string // in the message
	}{
		{"a wrong password", importer.RegistrySource{Image: containerDisk, CABundle: reg.caPEM, Username: regUser, Password: "wrong"}, importer.ReasonRefused, "401"},
		{"no credentials", importer.RegistrySource{Image: containerDisk, CABundle: reg.caPEM}, importer.ReasonRefused, "401"},
		{"an untrusted certificate", importer.RegistrySource{Image: containerDisk, Username: regUser, Password: regPass}, importer.ReasonRefused, "certificate"},
		{"an unknown tag", importer.RegistrySource{Image: reg.host + "/guest:v2", CABundle: reg.caPEM, Username: regUser, Password: regPass}, importer.ReasonRefused, "MANIFEST_UNKNOWN"},
		{"no disk in the image", importer.RegistrySource{Image: noDisk, CABundle: reg.caPEM, Username: regUser, Password: regPass}, importer.ReasonUnsupportedFormat, "no file under disk/"},
		{"no image for the architecture", importer.RegistrySource{Image: multi, Architecture: "s390x", CABundle: reg.caPEM, Username: regUser, Password: regPass}, importer.ReasonRefused, "linux/s390x in the image index (it has: linux/amd64, linux/arm64)"},
		{"an invalid reference", importer.RegistrySource{Image: "UPPER/case:v1"}, importer.ReasonRefused, "parse reference"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := read(t, tc.src)
			if r := importer.ReasonOf(err); r != tc.want || !strings.Contains(err.Error(), tc.in) {
				t.Fatalf("error %v (reason %q), want reason %s naming %q", err, r, tc.want, tc.in)
			}
			if importer.IsRetryable(err) || strings.Contains(err.Error(), regPass) {
				t.Errorf("error %v: retryable or shows the password", err)
			}
		})
	}

	t.Run("a corrupt layer", func(t *testing.T) {
		reg.corrupt.Store(true)
		defer reg.corrupt.Store(false)
		_, _, err := read(t, ok)
		if importer.ReasonOf(err) != importer.ReasonCorrupt {
			t.Fatalf("error %v, want %s", err, importer.ReasonCorrupt)
		}
	})

	t.Run("a stalled layer", func(t *testing.T) {
		reg.stall.Store(true)
		defer reg.stall.Store(false)
		stalls := ok
		stalls.Stall = 200 * time.Millisecond
		_, _, err := read(t, stalls)
		if !importer.IsRetryable(err) || !strings.Contains(err.Error(), "no data for") {
			t.Fatalf("error %v, want a retryable one saying no data came", err)
		}
	})

	t.Run("unreachable", func(t *testing.T) {
		gone := startRegistry(t, false)
		src := importer.RegistrySource{Image: gone.host + "/guest:v1", CABundle: gone.caPEM}
		gone.srv.Close()
		// An error that is no *Error counts as unreachable (Source).
		if _, _, err := read(t, src); err == nil || (importer.ReasonOf(err) != "" && !importer.IsRetryable(err)) {
			t.Fatalf("error %v, want a retryable one", err)
		}
	})
}

// TestRegistrySourcePlainHTTP: a registry answering plain HTTP is refused
// unless it is listed as insecure, although go-containerregistry itself
// would fall back to HTTP for a loopback address.
func TestRegistrySourcePlainHTTP(t *testing.T) {
	reg := startRegistry(t, true)
	disk := []byte("a small disk")
	ref := reg.push(t, "guest:v1", image(t, layer(t, entry{name: "disk/disk.img", data: disk})))
	src := importer.RegistrySource{Image: ref, Username: regUser, Password: regPass}
	_, _, err := read(t, src)
	if importer.ReasonOf(err) != importer.ReasonRefused || !strings.Contains(err.Error(), "insecureRegistries") {
		t.Fatalf("plain HTTP without Insecure: %v, want it refused, naming insecureRegistries", err)
	}
	src.Insecure = true
	if got, _, err := read(t, src); err != nil || !bytes.Equal(got, disk) {
		t.Fatalf("plain HTTP with Insecure: %q, %v", got, err)
	}
}

// TestRegistrySourceToken: a registry that answers 401 with a Bearer
// challenge gets the credentials at its token service, and the token
// alone afterwards, as Docker's registries ask.
func TestRegistrySourceToken(t *testing.T) {
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	const token = "token-of-the-test"
	var exchanged atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/token" {
			if u, p, ok := req.BasicAuth(); !ok || u != regUser || p != regPass || req.URL.Query().Get("service") != "test-registry" {
				http.Error(w, "credentials, please", http.StatusUnauthorized)
				return
			}
			exchanged.Add(1)
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"token":"`+token+`"}`)
			return
		}
		if req.Header.Get("Authorization") != "Bearer "+token {
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+srv.URL+`/token",service="test-registry"`)
			http.Error(w, "a token, please", http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	reg := &testRegistry{srv: srv, host: strings.TrimPrefix(srv.URL, "https://"), caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}
	disk := []byte("a disk behind a token")
	ref := reg.push(t, "guest:v1", image(t, layer(t, entry{name: "disk/disk.img", data: disk})))
	pushes := exchanged.Load()

	src := importer.RegistrySource{Image: ref, CABundle: reg.caPEM, Username: regUser, Password: regPass}
	if got, _, err := read(t, src); err != nil || !bytes.Equal(got, disk) {
		t.Fatalf("with the right credentials: %q, %v; want the disk", got, err)
	}
	if exchanged.Load() == pushes {
		t.Errorf("the pull exchanged no credentials for a token")
	}
	src.Password = "wrong-Passw0rd-x"
	_, _, err := read(t, src)
	if importer.ReasonOf(err) != importer.ReasonRefused || strings.Contains(err.Error(), src.Password) {
		t.Fatalf("a wrong password: %v, want it refused without the password", err)
	}
}
