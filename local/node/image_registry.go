package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/virtkit/virtkit/local/node/unpack"
)

// RegistryImageStore is an ImageStore that pulls images from one OCI
// registry over plain HTTP (local/registry, which virt-local serves on
// loopback) and unpacks each into a folder of its own, which Mount returns.
//
// A reference is pulled when its registry is Registry, or, Registry being
// a loopback address, any loopback name with the same port
// (localhost:5000/vm/disk:v1 with Registry 127.0.0.1:5000). Any other
// reference is not found (ErrImageNotFound): the node pulls from no other
// registry, so that it works offline; push such images to Registry first.
//
// A tag is resolved on every Mount, so a tag pushed again is unpacked
// again. The image (for an index, its linux image for this machine's
// architecture) is unpacked under Dir/sha256/HEX, HEX its manifest's
// digest, as a container runtime would: layer after layer, OCI whiteouts
// applied, owners and modes kept; an entry whose path leaves the image's
// root, or passes through a symbolic link leading out of it, fails the
// pull. Device nodes and FIFOs are not made. An image is unpacked into a
// temporary folder that is renamed when complete, so a folder under Dir is
// always whole; an image unpacked once is reused. Nothing is evicted:
// remove Dir/sha256/HEX of an image no pod uses to reclaim it. Dir belongs
// to one store.
//
// Use it by pointer; the zero value of the unexported fields is ready.
type RegistryImageStore struct {
	// Registry is the registry's host:port, e.g. 127.0.0.1:5000 (required).
	Registry string
	// Dir holds the unpacked images (required).
	Dir string
	// Logger receives a line per unpacked image.
	Logger logr.Logger
	// Transport carries the registry requests. Default
	// http.DefaultTransport.
	Transport http.RoundTripper

	// unpacking is held while an image is unpacked: one at a time, which
	// also lets each clean what an interrupted one left.
	unpacking sync.Mutex
}

var _ ImageStore = (*RegistryImageStore)(nil)

// Mount implements ImageStore: it returns Dir/sha256/HEX, unpacking the
// image first if needed.
func (s *RegistryImageStore) Mount(ctx context.Context, reference string) (string, error) {
	if s.Registry == "" || s.Dir == "" {
		return "", errors.New("node: RegistryImageStore: Registry and Dir are required")
	}
	ref, err := name.ParseReference(reference)
	if err != nil {
		return "", fmt.Errorf("%w: %q is not an image reference: %v", ErrImageNotFound, reference, err)
	}
	if host := ref.Context().RegistryStr(); !sameRegistry(host, s.Registry) {
		return "", fmt.Errorf("%w: %q: the node pulls from its registry %s only, not from %s (push the image to %s/%s)",
			ErrImageNotFound, reference, s.Registry, host, s.Registry, ref.Context().RepositoryStr())
	}
	// The same registry under the address it is reached at.
	sep := ":"
	if _, ok := ref.(name.Digest); ok {
		sep = "@"
	}
	local, err := name.ParseReference(s.Registry+"/"+ref.Context().RepositoryStr()+sep+ref.Identifier(), name.Insecure)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %v", ErrImageNotFound, reference, err)
	}
	if d, ok := ref.(name.Digest); ok {
		// An image's manifest digest needs no registry once unpacked.
		if h, err := v1.NewHash(d.DigestStr()); err == nil && isDir(s.imageDir(h)) {
			return s.imageDir(h), nil
		}
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}),
		// One try: the pod's set-up is retried with back-off.
		remote.WithRetryBackoff(remote.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 1})}
	if s.Transport != nil {
		opts = append(opts, remote.WithTransport(s.Transport))
	}
	img, err := remote.Image(local, opts...)
	if err != nil {
		var te *transport.Error
		if errors.As(err, &te) && te.StatusCode == http.StatusNotFound {
			return "", fmt.Errorf("%w: %q is not in the registry %s", ErrImageNotFound, reference, s.Registry)
		}
		return "", fmt.Errorf("node: image %q from the registry %s: %w", reference, s.Registry, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return "", fmt.Errorf("node: image %q: %w", reference, err)
	}
	dir := s.imageDir(digest)
	if isDir(dir) {
		return dir, nil
	}
	if err := s.unpack(ctx, img, digest); err != nil {
		return "", fmt.Errorf("node: image %q (%s): %w", reference, digest, err)
	}
	return dir, nil
}

// imageDir is the folder of the image whose manifest has digest h.
func (s *RegistryImageStore) imageDir(h v1.Hash) string {
	return filepath.Join(s.Dir, h.Algorithm, h.Hex)
}

// tmpPrefix names the folders images are unpacked into.
const tmpPrefix = ".unpack-"

// unpack unpacks img into a temporary folder of Dir, then renames it to
// its digest's folder.
func (s *RegistryImageStore) unpack(ctx context.Context, img v1.Image, digest v1.Hash) error {
	s.unpacking.Lock()
	defer s.unpacking.Unlock()
	dir := s.imageDir(digest)
	if isDir(dir) {
		return nil // unpacked meanwhile
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	// What an interrupted unpack left: no other one runs now.
	if left, err := filepath.Glob(filepath.Join(s.Dir, tmpPrefix+"*")); err == nil {
		for _, l := range left {
			_ = os.RemoveAll(l)
		}
	}
	tmp, err := os.MkdirTemp(s.Dir, tmpPrefix+digest.Hex[:12]+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // nothing left once renamed
	start := time.Now()
	if err := unpack.Image(ctx, img, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("unpacked image: %w", err)
	}
	log := s.Logger
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	log.Info("image unpacked", "digest", digest.String(), "folder", dir, "took", time.Since(start).Round(time.Millisecond).String())
	return nil
}

// sameRegistry reports whether host names the registry at addr: the same
// host:port, or two loopback names with the same port.
func sameRegistry(host, addr string) bool {
	if strings.EqualFold(host, addr) {
		return true
	}
	h1, p1, err1 := net.SplitHostPort(host)
	h2, p2, err2 := net.SplitHostPort(addr)
	return err1 == nil && err2 == nil && p1 == p2 && isLoopback(h1) && isLoopback(h2)
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
