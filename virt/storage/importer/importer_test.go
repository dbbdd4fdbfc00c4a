package importer_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/virtkit/virtkit/virt/storage"
	"github.com/virtkit/virtkit/virt/storage/importer"
	"github.com/virtkit/virtkit/virt/storage/importer/importertest"
)

// The credentials and header the test server requires.
const (
	user       = "importer"
	password   = "s3cret-Passw0rd"
	headerName = "X-Virtkit-Test"
	headerVal  = "extra-header"
)

// server is an HTTPS server of images that wants basic auth and a header.
type server struct {
	srv *httptest.Server
	ca  []byte
	mu  sync.Mutex
	img map[string][]byte
}

func newServer(t *testing.T) *server {
	s := &server{img: map[string][]byte{}}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes of the wrong-CA cases
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	s.ca = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
	return s
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
		http.Error(w, "who are you", http.StatusUnauthorized)
		return
	}
	if r.Header.Get(headerName) != headerVal {
		http.Error(w, "missing header", http.StatusBadRequest)
		return
	}
	if r.URL.Path == "/unavailable" {
		http.Error(w, "later", http.StatusServiceUnavailable)
		return
	}
	if r.URL.Path == "/stall" {
		// Half of a 1 MiB body, then nothing until the client leaves.
		w.Header().Set("Content-Length", "1048576")
		_, _ = w.Write(make([]byte, 512<<10))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	}
	s.mu.Lock()
	b, ok := s.img[strings.TrimPrefix(r.URL.Path, "/images/")]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b))
}

// put serves image at /images/name.
func (s *server) put(name string, image []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.img[name] = image
}

// source is an HTTPSource of path on s with the right credentials.
func (s *server) source(path string) importer.HTTPSource {
	return importer.HTTPSource{
		URL:      s.srv.URL + path,
		CABundle: s.ca,
		Username: user,
		Password: password,
		Header:   http.Header{headerName: {headerVal}},
	}
}

// closedPort is an https URL nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "https://" + addr + "/disk.img"
}

// qemuImg is qemu-img's path; `make deps` installs it (qemu-utils).
func qemuImg(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("qemu-img")
	if err != nil {
		t.Fatal("qemu-img not in PATH: `make deps` installs qemu-utils")
	}
	return p
}

// The real Importer passes the contract, over HTTPS with basic auth and an
// extra header, into files; with Go's xz decoder and with the xz program.
func TestContract(t *testing.T) {
	t.Run("GoXZ", func(t *testing.T) { runContract(t, importer.New()) })
	t.Run("XZProgram", func(t *testing.T) {
		if _, err := exec.LookPath("xz"); err != nil {
			t.Fatal("no xz program: `make deps` installs xz-utils")
		}
		runContract(t, importer.New(importer.WithXZ("xz")))
	})
}

func runContract(t *testing.T, im *importer.Importer) {
	importertest.Run(t, func(t *testing.T) importertest.Harness {
		s := newServer(t)
		return importertest.Harness{
			Importer: im,
			Serve: func(_ *testing.T, name string, image []byte, _ importertest.Want) importer.Source {
				s.put(name, image)
				return s.source("/images/" + name)
			},
			Unreachable: func(t *testing.T, _ importertest.Want) importer.Source {
				return importer.HTTPSource{URL: closedPort(t)}
			},
			Caps: importertest.Capabilities{WritesFiles: true},
		}
	})
}

// convertTo makes an image of format holding importertest.Disk with
// qemu-img, returning its bytes and virtual size.
func convertTo(t *testing.T, qemu, format string, opts ...string) ([]byte, int64) {
	t.Helper()
	dir := t.TempDir()
	raw := filepath.Join(dir, "disk.raw")
	if err := os.WriteFile(raw, importertest.Disk(), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "disk."+format)
	args := append([]string{"convert", "-f", "raw", "-O", format}, opts...)
	run(t, qemu, append(args, raw, out)...)
	return readImage(t, qemu, out, format)
}

func readImage(t *testing.T, qemu, path, format string) ([]byte, int64) {
	t.Helper()
	var info struct {
		VirtualSize int64 `json:"virtual-size"`
	}
	if err := json.Unmarshal(run(t, qemu, "info", "--output=json", "-f", format, path), &info); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b, info.VirtualSize
}

func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, stderr)
	}
	return out
}

// Images qemu-img reads are downloaded, converted and extended; the scratch
// space is left empty.
func TestConvert(t *testing.T) {
	qemu := qemuImg(t)
	s := newServer(t)
	im := importer.New(importer.WithQemuImg(qemu))
	const size = 8 << 20
	for _, tc := range []struct {
		format string
		opts   []string
		gzip   bool
	}{
		{format: "qcow2"},
		{format: "qcow2", gzip: true},
		{format: "qcow2", opts: []string{"-c"}}, // compressed clusters
		{format: "vmdk"},
		{format: "vmdk", opts: []string{"-o", "subformat=streamOptimized"}},
		{format: "vdi"},
		{format: "vpc", opts: []string{"-o", "force_size=on"}},
		{format: "vhdx"},
	} {
		name := tc.format + strings.Join(tc.opts, "")
		if tc.gzip {
			name += ".gz"
		}
		t.Run(name, func(t *testing.T) {
			image, vsize := convertTo(t, qemu, tc.format, tc.opts...)
			want := importer.Result{Format: tc.format, VirtualSize: vsize, Transferred: int64(len(image))}
			if tc.gzip {
				image = importertest.Gzip(t, image)
				want.Compression, want.Transferred = importer.CompressionGzip, int64(len(image))
			}
			s.put(name, image)
			dir := t.TempDir()
			scratch := filepath.Join(dir, "scratch") // missing: made and removed
			path := filepath.Join(dir, "disk.img")
			got, err := im.Import(context.Background(), s.source("/images/"+name), importer.Target{Path: path, Size: size, ScratchDir: scratch})
			if err != nil {
				t.Fatalf("Import: %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Result (-want +got):\n%s", diff)
			}
			importertest.CheckDisk(t, path, size)
			checkSparse(t, path, size)
			if _, err := os.Lstat(scratch); err == nil {
				t.Errorf("the scratch folder %s is left", scratch)
			}
		})
	}
}

// What qemu-img would read but the importer must not, or what does not
// fit, is refused before anything is written; the scratch space is left
// empty.
func TestConvertRefused(t *testing.T) {
	qemu := qemuImg(t)
	s := newServer(t)
	im := importer.New(importer.WithQemuImg(qemu))
	dir := t.TempDir()
	base := filepath.Join(dir, "base.raw")
	if err := os.WriteFile(base, importertest.Disk(), 0o600); err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(dir, "overlay.qcow2")
	run(t, qemu, "create", "-f", "qcow2", "-b", base, "-F", "raw", overlay)
	withBacking, _ := readImage(t, qemu, overlay, "qcow2")
	large := filepath.Join(dir, "large.vmdk")
	run(t, qemu, "create", "-f", "vmdk", large, "64M")
	tooLarge, _ := readImage(t, qemu, large, "vmdk")
	largeQ := filepath.Join(dir, "large.qcow2")
	run(t, qemu, "create", "-f", "qcow2", largeQ, "64M")
	tooLargeQ, _ := readImage(t, qemu, largeQ, "qcow2")

	for _, tc := range []struct {
		name   string
		image  []byte
		reason importer.Reason
		is     error
	}{
		{"qcow2-backing-file", withBacking, importer.ReasonUnsupportedFormat, storage.ErrUnsafeImage},
		{"qcow2-too-large", tooLargeQ, importer.ReasonTooLarge, storage.ErrImageTooLarge},
		{"vmdk-too-large", tooLarge, importer.ReasonTooLarge, storage.ErrImageTooLarge},
		{"vmdk-too-large.xz", importertest.XZ(t, tooLarge), importer.ReasonTooLarge, storage.ErrImageTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.put(tc.name, tc.image)
			scratch := t.TempDir()
			path := filepath.Join(t.TempDir(), "disk.img")
			_, err := im.Import(context.Background(), s.source("/images/"+tc.name), importer.Target{Path: path, Size: 8 << 20, ScratchDir: scratch})
			if got := importer.ReasonOf(err); got != tc.reason || !errors.Is(err, tc.is) {
				t.Fatalf("Import: %v, want reason %q wrapping %v", err, tc.reason, tc.is)
			}
			if _, err := os.Lstat(path); err == nil {
				t.Errorf("%s is left after a refused import", path)
			}
			if left, _ := os.ReadDir(scratch); len(left) > 0 {
				t.Errorf("the scratch folder holds %v after the import", left)
			}
		})
	}
}

// Progress is reported as bytes arrive, at most about every 1%, and ends
// with all of them.
func TestProgress(t *testing.T) {
	s := newServer(t)
	image := importertest.Disk()
	s.put("disk", image)
	var calls [][2]int64
	im := importer.New(importer.WithProgress(func(done, total int64) { calls = append(calls, [2]int64{done, total}) }))
	res, err := im.Import(context.Background(), s.source("/images/disk"), importer.Target{Path: filepath.Join(t.TempDir(), "disk.img"), Size: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) < 2 || len(calls) > 110 {
		t.Fatalf("Progress called %d times, want between 2 and about 101", len(calls))
	}
	if last := calls[len(calls)-1]; last != [2]int64{res.Transferred, int64(len(image))} {
		t.Errorf("last Progress(%d, %d), want (%d, %d)", last[0], last[1], res.Transferred, len(image))
	}
	for i := 1; i < len(calls); i++ {
		if calls[i][0] < calls[i-1][0] {
			t.Errorf("Progress went back from %d to %d", calls[i-1][0], calls[i][0])
		}
	}
}

// A block target is written in place, zeros too, and neither truncated
// nor removed; a regular file stands for the device.
func TestBlockTarget(t *testing.T) {
	s := newServer(t)
	s.put("disk.gz", importertest.Gzip(t, importertest.Disk()))
	const devSize = 8 << 20
	for _, tc := range []struct {
		name  string
		image string
		qemu  bool
	}{
		{name: "raw.gz", image: "disk.gz"},
		{name: "qcow2", image: "disk.qcow2", qemu: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im := importer.New()
			if tc.qemu {
				qemu := qemuImg(t)
				image, _ := convertTo(t, qemu, "qcow2")
				s.put(tc.image, image)
				im = importer.New(importer.WithQemuImg(qemu))
			}
			dev := filepath.Join(t.TempDir(), "dev")
			if err := os.WriteFile(dev, bytes.Repeat([]byte{0xaa}, devSize), 0o600); err != nil {
				t.Fatal(err)
			}
			res, err := im.Import(context.Background(), s.source("/images/"+tc.image), importer.Target{Path: dev, Block: true, ScratchDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if res.VirtualSize != importertest.DiskSize {
				t.Errorf("VirtualSize %d, want %d", res.VirtualSize, importertest.DiskSize)
			}
			got, err := os.ReadFile(dev)
			if err != nil {
				t.Fatal(err)
			}
			want := append(importertest.Disk(), bytes.Repeat([]byte{0xaa}, devSize-importertest.DiskSize)...)
			if !bytes.Equal(got, want) {
				t.Errorf("the device does not hold the image followed by what was there")
			}
		})
	}
	t.Run("too-small", func(t *testing.T) {
		dev := filepath.Join(t.TempDir(), "dev")
		if err := os.WriteFile(dev, make([]byte, 1<<20), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := importer.New().Import(context.Background(), s.source("/images/disk.gz"), importer.Target{Path: dev, Block: true})
		if got := importer.ReasonOf(err); got != importer.ReasonTooLarge {
			t.Errorf("Import into a 1 MiB device: %v, want reason %q", err, importer.ReasonTooLarge)
		}
		if fi, err := os.Stat(dev); err != nil || fi.Size() != 1<<20 {
			t.Errorf("the device after a failed import: %v, %v; want it left as it was", fi, err)
		}
		err = importer.New().Blank(context.Background(), importer.Target{Path: dev, Block: true, Size: 2 << 20})
		if got := importer.ReasonOf(err); got != importer.ReasonWrite {
			t.Errorf("Blank of 2 MiB on a 1 MiB device: %v, want reason %q", err, importer.ReasonWrite)
		}
	})
}

// A raw file target is sparse: the zeros of the image and of the
// extension take no space.
func TestSparse(t *testing.T) {
	s := newServer(t)
	s.put("disk", importertest.Disk())
	path := filepath.Join(t.TempDir(), "disk.img")
	if _, err := importer.New().Import(context.Background(), s.source("/images/disk"), importer.Target{Path: path, Size: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	importertest.CheckDisk(t, path, 64<<20)
	checkSparse(t, path, 64<<20)
}

// checkSparse checks that the file at path, size bytes long, allocates
// at most a few blocks.
func checkSparse(t *testing.T, path string, size int64) {
	t.Helper()
	used, ok := allocated(t, path)
	if !ok {
		return
	}
	if used > 1<<20 {
		t.Errorf("%s allocates %d bytes of its %d; want it sparse", path, used, size)
	}
}

// gzipped compresses b, for the example.
func gzipped(b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	_, _ = w.Write(b)
	_ = w.Close()
	return out.Bytes()
}

// An import cancelled while bytes flow stops and leaves no file.
func TestCancelMidway(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "8388608")
		_, _ = w.Write(bytes.Repeat([]byte{1}, 2<<20))
		w.(http.Flusher).Flush()
		select { // then nothing more
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	im := importer.New(importer.WithProgress(func(done, _ int64) {
		if done >= 1<<20 {
			cancel()
		}
	}))
	path := filepath.Join(t.TempDir(), "disk.img")
	done := make(chan error, 1)
	go func() {
		_, err := im.Import(ctx, importer.HTTPSource{URL: srv.URL}, importer.Target{Path: path, Size: 16 << 20})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || importer.IsRetryable(err) {
			t.Errorf("Import cancelled midway: %v, want context.Canceled, not retryable", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Import did not stop when cancelled")
	}
	if _, err := os.Lstat(path); err == nil {
		t.Error("the partial disk is left")
	}
}

// A program that cannot run is not blamed on the image.
func TestNoQemuImg(t *testing.T) {
	s := newServer(t)
	image, _ := convertTo(t, qemuImg(t), "qcow2")
	s.put("disk.qcow2", image)
	path := filepath.Join(t.TempDir(), "disk.img")
	_, err := importer.New(importer.WithQemuImg(filepath.Join(t.TempDir(), "no-qemu-img"))).
		Import(context.Background(), s.source("/images/disk.qcow2"), importer.Target{Path: path, Size: 8 << 20})
	if !errors.Is(err, importer.ErrCannotRun) || importer.ReasonOf(err) != "" {
		t.Errorf("Import without qemu-img: %v, want ErrCannotRun and no reason", err)
	}
	if _, err := os.Lstat(path); err == nil {
		t.Error("a disk is left")
	}
}

// TestScratchBounded: an image file far larger than any disk that fits its
// target is cut off while it downloads (a folder-backed claim would not
// stop it), refused as too large, and leaves no scratch file or target.
func TestScratchBounded(t *testing.T) {
	s := newServer(t)
	img := importertest.QCOW2(t, storage.QCOW2Options{Size: 1 << 20})
	s.put("padded.qcow2", append(img, make([]byte, 70<<20)...))
	dir := t.TempDir()
	path, scratch := filepath.Join(dir, "disk.img"), filepath.Join(dir, "scratch")
	_, err := importer.New().Import(context.Background(), s.source("/images/padded.qcow2"), importer.Target{Path: path, Size: 1 << 20, ScratchDir: scratch})
	if importer.ReasonOf(err) != importer.ReasonTooLarge || !errors.Is(err, storage.ErrImageTooLarge) {
		t.Fatalf("Import of a padded image: %v, want TooLarge", err)
	}
	for _, p := range []string{path, scratch} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind: %v", p, err)
		}
	}
}
