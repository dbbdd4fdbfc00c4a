package upload

import (
	"context"
	"crypto"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
)

// Path is where the proxy and the upload server take an image, as CDI's
// (KubeVirt's virtctl posts there after finding no asynchronous endpoint).
const Path = "/v1beta1/upload"

// The proxy's other paths, CDI's: PathAsync takes the image as Path does,
// PathForm and PathFormAsync as the part "file" of a multipart form (a
// browser's upload). virtkit's proxy answers all of them once the image is
// stored: the asynchronous ones do not answer earlier, and a HEAD, which
// KubeVirt's virtctl sends to find them, is refused, so that it posts to
// Path.
const (
	PathAsync     = "/v1beta1/upload-async"
	PathForm      = "/v1beta1/upload-form"
	PathFormAsync = "/v1beta1/upload-form-async"
)

// ProxyPaths are all the paths the proxy takes uploads at: the v1beta1
// ones above and their v1alpha1 forms, as CDI's.
var ProxyPaths = []string{Path, "/v1alpha1/upload", PathAsync, "/v1alpha1/upload-async",
	PathForm, "/v1alpha1/upload-form", PathFormAsync, "/v1alpha1/upload-form-async"}

// formField is the form part of a form upload that holds the image.
const formField = "file"

// isForm says whether path takes the image as a multipart form.
func isForm(path string) bool { return strings.Contains(path, "/upload-form") }

// HealthPath answers 200 on an upload server that takes connections (its
// readiness probe).
const HealthPath = "/healthz"

// copyBuffer is the size of the proxy's writes to an upload server.
const copyBuffer = 256 << 10

// maxReply bounds what is read of an upload server's answer.
const maxReply = 64 << 10

// Backend is where one claim's upload server listens.
type Backend struct {
	// URL is its base address (https://10.88.0.7:8443).
	URL *url.URL
	// TLS checks its certificate and presents the proxy's.
	TLS *tls.Config
}

// ErrNotReady is wrapped by a Backends error when the claim exists but its
// upload server is not ready yet; the proxy answers 503.
var ErrNotReady = errors.New("not ready for upload")

// ErrNoUpload is wrapped by a Backends error when the claim does not
// exist or takes no upload; the proxy answers 404.
var ErrNoUpload = errors.New("no upload expected")

// Backends finds the upload server of a claim.
type Backends interface {
	Backend(ctx context.Context, namespace, claim string) (Backend, error)
}

// Proxy is the upload proxy as an http.Handler serving Path.
type Proxy struct {
	key      func() (crypto.PublicKey, error)
	backends Backends
	clock    clock.PassiveClock
	log      logr.Logger
}

var _ http.Handler = (*Proxy)(nil)

// ProxyOption changes a Proxy.
type ProxyOption func(*Proxy)

// WithProxyClock sets the clock tokens expire by.
func WithProxyClock(c clock.PassiveClock) ProxyOption { return func(p *Proxy) { p.clock = c } }

// WithProxyLogger sets where failed uploads are logged.
func WithProxyLogger(l logr.Logger) ProxyOption { return func(p *Proxy) { p.log = l } }

// NewProxy returns a proxy accepting tokens signed by the key key returns
// (read at each request, so a renewed key takes effect), sending uploads
// where b says.
func NewProxy(key func() (crypto.PublicKey, error), b Backends, opts ...ProxyOption) *Proxy {
	p := &Proxy{key: key, backends: b, clock: clock.RealClock{}, log: logr.Discard()}
	for _, o := range opts {
		o(p)
	}
	return p
}

// ServeHTTP checks the bearer token of a POST to Path and streams its body
// to the claim's upload server, answering with the server's status and
// message.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !isUpload(w, r, ProxyPaths) {
		return
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		http.Error(w, "an upload needs an upload token as bearer token (create an UploadTokenRequest)", http.StatusUnauthorized)
		return
	}
	pub, err := p.key()
	if err != nil {
		p.fail(w, http.StatusInternalServerError, fmt.Errorf("reading the token key: %w", err))
		return
	}
	c, err := Verify(pub, strings.TrimSpace(tok), p.clock.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	be, err := p.backends.Backend(r.Context(), c.Namespace, c.Claim)
	switch {
	case errors.Is(err, ErrNotReady):
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	case errors.Is(err, ErrNoUpload):
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	case err != nil:
		p.fail(w, http.StatusInternalServerError, fmt.Errorf("finding the upload server of claim %s/%s: %w", c.Namespace, c.Claim, err))
		return
	}
	p.forward(w, r, be, c)
}

// forward streams r's body (a form's file part) to be and copies its
// answer back.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, be Backend, c Claims) {
	body, length := io.Reader(r.Body), r.ContentLength
	if isForm(r.URL.Path) {
		part, err := filePart(r)
		if err != nil {
			http.Error(w, "a form upload holds the image in its part \""+formField+"\": "+err.Error(), http.StatusBadRequest)
			return
		}
		body, length = part, -1
	}
	target := be.URL.JoinPath(Path)
	out, err := http.NewRequestWithContext(r.Context(), http.MethodPost, target.String(), body)
	if err != nil {
		p.fail(w, http.StatusInternalServerError, err)
		return
	}
	out.ContentLength = length
	out.Header.Set("Content-Type", "application/octet-stream")
	// Large writes make full TLS records: with the default 4 KiB buffer
	// the proxy spends much of its time framing small ones.
	tr := &http.Transport{TLSClientConfig: be.TLS, IdleConnTimeout: time.Second, WriteBufferSize: copyBuffer, ReadBufferSize: copyBuffer}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(out)
	if err != nil {
		p.fail(w, http.StatusBadGateway, fmt.Errorf("sending the upload of claim %s/%s to its upload server: %w", c.Namespace, c.Claim, err))
		return
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if resp.StatusCode != http.StatusOK {
		p.log.Info("upload refused", "namespace", c.Namespace, "claim", c.Claim, "status", resp.StatusCode, "message", string(msg))
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(msg)
}

// isUpload says whether r is a POST to Path, and answers it otherwise.
// filePart is the part of r's multipart form that holds the image,
// streamed: the parts before it are skipped unread.
func filePart(r *http.Request) (io.Reader, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, err
	}
	for {
		part, err := mr.NextPart()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, errors.New("no such part")
			}
			return nil, err
		}
		if part.FormName() == formField {
			return part, nil
		}
	}
}

// isUpload answers, and says false, unless r is a POST to one of paths.
func isUpload(w http.ResponseWriter, r *http.Request, paths []string) bool {
	switch {
	case !slices.Contains(paths, r.URL.Path):
		http.NotFound(w, r)
		return false
	case r.Method != http.MethodPost:
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "only POST uploads an image", http.StatusMethodNotAllowed)
		return false
	}
	return true
}

func (p *Proxy) fail(w http.ResponseWriter, code int, err error) {
	p.log.Error(err, "upload failed")
	http.Error(w, err.Error(), code)
}
