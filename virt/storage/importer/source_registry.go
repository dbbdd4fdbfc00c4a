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
	"sync/atomic"
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
	img, err := remote.Image(ref, remote.WithContext(ctx), remote.WithTransport(tr), remote.WithAuth(auth),
		remote.WithPlatform(v1.Platform{OS: "linux", Architecture: arch}), remote.WithUserAgent("virtkit-importer"))
	if err != nil {
		closeIdle()
		return nil, 0, registryError(ctx, src, "pulling the manifest", err)
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
	case errors.Is(err, errPlainHTTP), strings.Contains(err.Error(), "no child with platform"):
		// Only plain HTTP answers; or an image index without the platform
		// asked for (no typed error).
		return fail(ReasonRefused, src, fmt.Errorf("%s: %w", what, err))
	}
	return requestError(ctx, src, fmt.Errorf("%s: %w", what, err))
}

var errPlainHTTP = errors.New("the registry is reached over HTTPS only: list it in the CDIConfig's insecureRegistries to allow plain HTTP")

// transport is s.Transport, or a new one with the CA bundle, and a closer
// of its idle connections. Plain HTTP is refused unless s.Insecure
// (go-containerregistry tries it for loopback and private addresses), and
// a response body that stalls is closed.
func (s RegistrySource) transport() (http.RoundTripper, func(), error) {
	stall := s.Stall
	if stall <= 0 {
		stall = StallTimeout
	}
	if s.Transport != nil {
		return registryTransport{next: s.Transport, allowHTTP: s.Insecure, stall: stall}, func() {}, nil
	}
	tr, err := newTransport(s.CABundle, s.ProxyCABundle, s.Insecure)
	if err != nil {
		return nil, nil, err
	}
	return registryTransport{next: tr, allowHTTP: s.Insecure, stall: stall}, tr.CloseIdleConnections, nil
}

// registryTransport refuses plain HTTP requests unless allowed, and closes
// a response body that sends nothing for stall.
type registryTransport struct {
	next      http.RoundTripper
	allowHTTP bool
	stall     time.Duration
}

func (t registryTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != "https" && !t.allowHTTP {
		return nil, fmt.Errorf("%s: %w", r.URL.Host, errPlainHTTP)
	}
	resp, err := t.next.RoundTrip(r)
	if err == nil {
		resp.Body = newStallBody(resp.Body, t.stall)
	}
	return resp, err
}

// stallBody is a response body closed when it sends nothing for stall;
// its reads then fail with errStalled.
type stallBody struct {
	body    io.ReadCloser
	stall   time.Duration
	timer   *time.Timer
	stalled atomic.Bool
}

func newStallBody(body io.ReadCloser, stall time.Duration) *stallBody {
	b := &stallBody{body: body, stall: stall}
	b.timer = time.AfterFunc(stall, func() {
		b.stalled.Store(true)
		_ = body.Close()
	})
	return b
}

func (b *stallBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if n > 0 {
		b.timer.Reset(b.stall)
	}
	if err != nil && !errors.Is(err, io.EOF) && b.stalled.Load() {
		err = errStalled
	}
	return n, err
}

func (b *stallBody) Close() error {
	b.timer.Stop()
	return b.body.Close()
}
