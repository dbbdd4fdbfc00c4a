package importer

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/virtkit/virtkit/virt/storage/importer/contract"
)

// RegistrySource reads the disk of a containerDisk image from a container
// registry itself, as CDI's importer does with its default pull method
// (pod): the first regular file under disk/ in the image's layers, base
// layer first, streamed out of its layer.
//
// A registry is reached over HTTPS only, unless Insecure. The layer's
// digest is checked as the rest of the layer is read once the disk ends: a
// layer that does not match is ReasonCorrupt. A registry status of 401,
// 403 or 404 (a manifest or an image that is not there), a certificate
// CABundle (or the system) does not trust, and a registry answering only
// plain HTTP are ReasonRefused; an image with no disk is
// ReasonUnsupportedFormat; a failed connection, a response that stalls
// and 429 or 5xx are ReasonUnreachable. The password never appears in
// String() or in an error.
type RegistrySource struct {
	// Image is the reference, REGISTRY/REPOSITORY[:TAG|@DIGEST], without
	// CDI's docker:// scheme.
	Image string
	// CABundle is PEM; when set, its certificates are the only roots
	// trusted (none of the system's).
	CABundle []byte
	// ProxyCABundle is PEM: roots trusted besides CABundle (or the
	// system's), those of the proxy of the environment (CDI's
	// trustedCAProxy).
	ProxyCABundle []byte
	// Username and Password are sent as basic auth (exchanged for a token
	// where the registry asks for one) when Username != "".
	Username, Password string
	// Insecure skips the TLS certificate check and allows plain HTTP, for
	// a registry of the CDIConfig's insecureRegistries.
	Insecure bool
	// Architecture picks the image of an image index (CDI's
	// platform.architecture); default the importer's own. The OS is
	// linux.
	Architecture string
	// Transport, when set, is used as is (its TLS settings, its proxy);
	// CABundle, ProxyCABundle and Insecure's TLS part then do not apply.
	Transport http.RoundTripper
	// Stall is how long a response may send nothing before the pull is
	// abandoned as ReasonUnreachable; default StallTimeout.
	Stall time.Duration
}

var _ Source = RegistrySource{}

// String is docker://IMAGE, as CDI's URL.
func (s RegistrySource) String() string { return contract.RegistryScheme + s.Image }

// Open pulls the image's manifest and returns the disk file's bytes.
func (s RegistrySource) Open(ctx context.Context) (io.ReadCloser, int64, error) {
	src := s.String()
	var opts []name.Option
	if s.Insecure {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.ParseReference(s.Image, opts...)
	if err != nil {
		return nil, 0, fail(ReasonRefused, src, err)
	}
	tr, closeIdle, err := s.transport()
	if err != nil {
		return nil, 0, fail(ReasonRefused, src, err)
	}
	auth := authn.Anonymous
	if s.Username != "" {
		auth = &authn.Basic{Username: s.Username, Password: s.Password}
	}
	arch := s.Architecture
	if arch == "" {
		arch = runtime.GOARCH
	}
	desc, err := remote.Get(ref, remote.WithContext(ctx), remote.WithTransport(tr), remote.WithAuth(auth), remote.WithUserAgent("virtkit-importer"))
	if err != nil {
		closeIdle()
		return nil, 0, registryError(ctx, src, "pulling the manifest", err)
	}
	img, err := imageFor(desc, v1.Platform{OS: "linux", Architecture: arch})
	if err != nil {
		closeIdle()
		return nil, 0, registryError(ctx, src, "pulling the image's manifest", err)
	}
	layers, err := img.Layers()
	if err != nil {
		closeIdle()
		return nil, 0, registryError(ctx, src, "reading the manifest", err)
	}
	for i, l := range layers {
		lt, size, found, err := diskOfLayer(l)
		if err != nil {
			closeIdle()
			return nil, 0, registryError(ctx, src, fmt.Sprintf("reading layer %d", i), layerError(src, err))
		}
		if found {
			return &registryDisk{Reader: io.LimitReader(lt.tr, size), layer: lt, name: src, closeIdle: closeIdle}, size, nil
		}
	}
	closeIdle()
	return nil, 0, fail(ReasonUnsupportedFormat, src, fmt.Errorf("no file under %s/ in the image's %d layers: not a containerDisk image", contract.ImageDiskDir, len(layers)))
}

// errNoPlatform is an image index without an image for the platform.
var errNoPlatform = errors.New("no image for the platform")

// imageFor is desc's image: desc itself, or, for an image index, its
// first image whose platform satisfies want (a child without a platform
// is linux/amd64, as container runtimes take it).
func imageFor(desc *remote.Descriptor, want v1.Platform) (v1.Image, error) {
	if !desc.MediaType.IsIndex() {
		return desc.Image()
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var have []string
	for _, child := range m.Manifests {
		p := v1.Platform{OS: "linux", Architecture: "amd64"}
		if child.Platform != nil {
			p = *child.Platform
		}
		if !child.MediaType.IsImage() {
			continue
		}
		if p.Satisfies(want) {
			return idx.Image(child.Digest)
		}
		have = append(have, p.String())
	}
	return nil, fmt.Errorf("%w %s in the image index (it has: %s)", errNoPlatform, want.String(), strings.Join(have, ", "))
}

// layerTar is a layer's uncompressed stream read as a tar.
type layerTar struct {
	rc io.ReadCloser
	tr *tar.Reader
}

// diskOfLayer reads l until its first regular file under disk/ (found),
// or to its end (the stream is then closed).
func diskOfLayer(l v1.Layer) (*layerTar, int64, bool, error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return nil, 0, false, err
	}
	lt := &layerTar{rc: rc, tr: tar.NewReader(rc)}
	for {
		hdr, err := lt.tr.Next()
		if errors.Is(err, io.EOF) {
			// The rest of the stream: the digest is checked at its end.
			_, err = io.Copy(io.Discard, rc)
			rc.Close()
			return nil, 0, false, err
		}
		if err != nil {
			rc.Close()
			return nil, 0, false, err
		}
		if isDiskEntry(hdr) {
			return lt, hdr.Size, true, nil
		}
	}
}

// isDiskEntry says whether a layer's entry is a containerDisk's disk: a
// regular file under disk/ (or ./disk/), not a whiteout.
func isDiskEntry(hdr *tar.Header) bool {
	p := strings.TrimPrefix(hdr.Name, "./")
	return hdr.Typeflag == tar.TypeReg && strings.HasPrefix(p, contract.ImageDiskDir+"/") && !strings.HasPrefix(path.Base(p), ".wh.")
}

// registryDisk is the disk's bytes; once they end, the rest of the layer
// is read so that its digest is checked.
type registryDisk struct {
	io.Reader
	layer     *layerTar
	name      string
	closeIdle func()
	drained   bool
}

func (d *registryDisk) Read(p []byte) (int, error) {
	n, err := d.Reader.Read(p)
	if errors.Is(err, io.EOF) && !d.drained {
		d.drained = true
		if _, derr := io.Copy(io.Discard, d.layer.rc); derr != nil {
			return n, layerError(d.name, fmt.Errorf("the disk's layer: %w", derr))
		}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		err = layerError(d.name, err)
	}
	return n, err
}

func (d *registryDisk) Close() error {
	err := d.layer.rc.Close()
	d.closeIdle()
	return err
}

// layerError classifies an error reading a layer of src: a failed
// connection is left as it is (retryable), anything else (a digest or
// size that does not match, a broken compression or tar) is ReasonCorrupt,
// which no retry mends.
func layerError(src string, err error) error {
	var (
		e  *Error
		ne net.Error
		te *transport.Error
	)
	switch {
	case errors.Is(err, errStalled):
		return fail(ReasonUnreachable, src, err)
	case errors.As(err, &e), errors.As(err, &ne), errors.As(err, &te),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fail(ReasonCorrupt, src, err)
}

// registryError classifies an error of go-containerregistry while doing
// what.
func registryError(ctx context.Context, src, what string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %s: %w", src, what, ctx.Err())
	}
	var (
		te *transport.Error
		op *net.OpError
	)
	switch {
	case errors.As(err, &te):
		return fail(statusReason(te.StatusCode), src, fmt.Errorf("%s: %w", what, err))
	case errors.Is(err, errStalled):
		return fail(ReasonUnreachable, src, fmt.Errorf("%s: %w", what, err))
	case untrusted(err):
		return fail(ReasonRefused, src, fmt.Errorf("%s: %w", what, err))
	case errors.As(err, &op):
		// A connection that failed (go-containerregistry may also have
		// tried plain HTTP, which errPlainHTTP refused).
		return fail(ReasonUnreachable, src, fmt.Errorf("%s: %w", what, err))
	case errors.Is(err, errPlainHTTP), errors.Is(err, errNoPlatform):
		// Only plain HTTP answers; or an image index without the platform
		// asked for.
		return fail(ReasonRefused, src, fmt.Errorf("%s: %w", what, err))
	}
	return requestError(ctx, src, fmt.Errorf("%s: %w", what, err))
}

var errPlainHTTP = errors.New("the registry is reached over HTTPS only: list it in the CDIConfig's insecureRegistries to allow plain HTTP")

// transport is s.Transport, or a new one with the CA bundle, and a closer
// of its idle connections. Plain HTTP is refused unless s.Insecure
// (go-containerregistry tries it for loopback and private addresses), and
// a response body that stalls is ended.
func (s RegistrySource) transport() (http.RoundTripper, func(), error) {
	if s.Transport != nil {
		return registryTransport{next: newStallTransport(s.Transport, s.Stall), allowHTTP: s.Insecure}, func() {}, nil
	}
	tr, err := newTransport(s.CABundle, s.ProxyCABundle, s.Insecure)
	if err != nil {
		return nil, nil, err
	}
	return registryTransport{next: newStallTransport(tr, s.Stall), allowHTTP: s.Insecure}, tr.CloseIdleConnections, nil
}

// registryTransport refuses plain HTTP requests unless allowed.
type registryTransport struct {
	next      http.RoundTripper
	allowHTTP bool
}

func (t registryTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != "https" && !t.allowHTTP {
		return nil, fmt.Errorf("%s: %w", r.URL.Host, errPlainHTTP)
	}
	return t.next.RoundTrip(r)
}
