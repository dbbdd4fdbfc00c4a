package export

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"time"

	"github.com/go-logr/logr"
	"github.com/klauspost/compress/gzip"
	"k8s.io/utils/clock"
	exportv1 "kubevirt.io/api/export/v1beta1"

	"github.com/virtkit/virtkit/virt/confined"
)

// Server is an export server: an http.Handler serving one export's
// volumes and manifests to clients holding its token.
type Server struct {
	cfg   Config
	log   logr.Logger
	clock clock.Clock
	mux   *http.ServeMux
	roots []*confined.Root
}

var _ http.Handler = (*Server)(nil)

// Option configures a Server.
type Option func(*Server)

// WithLogger sets the logger (default: discard).
func WithLogger(l logr.Logger) Option { return func(s *Server) { s.log = l } }

// WithClock sets the clock the deadline is measured on (default: the
// real one).
func WithClock(c clock.Clock) Option { return func(s *Server) { s.clock = c } }

// copyBuffer is the size of the reads a volume is streamed with.
const copyBuffer = 1 << 20

// NewServer validates cfg and opens each file system volume's folder. It
// fails if a volume cannot be opened; Close releases them.
func NewServer(cfg Config, opts ...Option) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("export server: %w", err)
	}
	s := &Server{cfg: cfg, log: logr.Discard(), clock: clock.RealClock{}, mux: http.NewServeMux()}
	for _, o := range opts {
		o(s)
	}
	s.mux.HandleFunc(ReadyPath, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "OK") })
	for _, a := range []Audience{Internal, External} {
		s.mux.Handle(ManifestPath(a, exportv1.AuthHeader), s.authorized(http.HandlerFunc(s.headerSecret)))
		if cfg.ManifestDir != "" {
			s.mux.Handle(ManifestPath(a, exportv1.AllManifests), s.authorized(s.vmManifests(a)))
		}
	}
	for _, v := range cfg.Volumes {
		if err := s.addVolume(v); err != nil {
			s.Close()
			return nil, fmt.Errorf("export server %s: %w", cfg.Export, err)
		}
	}
	return s, nil
}

// addVolume registers v's paths.
func (s *Server) addVolume(v Volume) error {
	if v.Block {
		open := func() (*os.File, error) { return openDevice(v.Path) }
		s.mux.Handle(RawPath(v.Claim), s.authorized(s.raw(open)))
		s.mux.Handle(GzipPath(v.Claim), s.authorized(s.gzip(open)))
		return nil
	}
	root, err := confined.Open(v.Path, confined.NoSymlinks)
	if err != nil {
		return fmt.Errorf("volume %s: %w", v.Claim, err)
	}
	s.roots = append(s.roots, root)
	if v.Content == DiskImage {
		open := func() (*os.File, error) { return openImage(root) }
		s.mux.Handle(RawPath(v.Claim), s.authorized(s.raw(open)))
		s.mux.Handle(GzipPath(v.Claim), s.authorized(s.gzip(open)))
		return nil
	}
	s.mux.Handle(DirPath(v.Claim)+"/", s.authorized(http.StripPrefix(DirPath(v.Claim), http.FileServer(http.FS(rootFS{root})))))
	// The dir link has no slash (KubeVirt's); the listing's links are
	// relative to the folder, so the link redirects there. The Location is
	// relative as well (set by hand: ServeMux and http.Redirect make it
	// absolute): through the export proxy the server's paths are under
	// the export's prefix.
	s.mux.Handle(DirPath(v.Claim), s.authorized(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := url.URL{Path: path.Base(DirPath(v.Claim)) + "/", RawQuery: r.URL.RawQuery}
		w.Header().Set("Location", u.String())
		w.WriteHeader(http.StatusMovedPermanently)
	})))
	s.mux.Handle(ArchivePath(v.Claim), s.authorized(s.archive(root)))
	return nil
}

// Close releases the volumes' folders.
func (s *Server) Close() error {
	var errs []error
	for _, r := range s.roots {
		errs = append(errs, r.Close())
	}
	s.roots = nil
	return errors.Join(errs...)
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// authorized answers 401, with no body, a request without the export's
// current token, and 500 when the token cannot be read.
func (s *Server) authorized(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		want, err := readToken(s.cfg.TokenFile)
		if err != nil {
			s.log.Error(err, "reading the export token")
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		if !authorized(r, want) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// allow answers 405 to a method not in methods.
func allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", fmt.Sprint(methods))
	w.WriteHeader(http.StatusMethodNotAllowed)
	return false
}

// raw serves a disk image as it is, with ranges and HEAD.
func (s *Server) raw(open func() (*os.File, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allow(w, r, http.MethodGet, http.MethodHead) {
			return
		}
		f, err := open()
		if err != nil {
			s.fail(w, r, err)
			return
		}
		defer f.Close()
		w.Header().Set("Content-Type", "application/octet-stream")
		http.ServeContent(w, r, rawName, time.Time{}, f)
	})
}

// gzip serves a disk image gzip-compressed on the fly, at the fastest
// level: the link is for moving disks, which are mostly zeros.
func (s *Server) gzip(open func() (*os.File, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allow(w, r, http.MethodGet) {
			return
		}
		f, err := open()
		if err != nil {
			s.fail(w, r, err)
			return
		}
		defer f.Close()
		w.Header().Set("Content-Type", "application/x-gzip")
		zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // the level is valid
		if _, err := io.CopyBuffer(zw, f, make([]byte, copyBuffer)); err != nil {
			s.abort(r, err)
		}
		if err := zw.Close(); err != nil {
			s.abort(r, err)
		}
	})
}

// archive serves a file system volume as a tar.gz stream.
func (s *Server) archive(root *confined.Root) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allow(w, r, http.MethodGet) {
			return
		}
		w.Header().Set("Content-Type", "application/x-gzip")
		zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
		if err := writeTar(r.Context(), zw, root, s.log); err != nil {
			s.abort(r, err)
		}
		if err := zw.Close(); err != nil {
			s.abort(r, err)
		}
	})
}

// headerSecret serves the auth-header-secret manifest.
func (s *Server) headerSecret(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet) {
		return
	}
	tok, err := readToken(s.cfg.TokenFile)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	secret, err := json.Marshal(HeaderSecret(s.cfg.Export, tok))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	b, ct, err := manifestList(r, []json.RawMessage{secret})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", ct)
	_, _ = w.Write(b)
}

// vmManifests serves the VM manifests for audience a.
func (s *Server) vmManifests(a Audience) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allow(w, r, http.MethodGet) {
			return
		}
		items, err := readManifests(s.cfg.ManifestDir, a)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		b, ct, err := manifestList(r, items)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		w.Header().Set("Content-Type", ct)
		_, _ = w.Write(b)
	})
}

// fail answers a request that failed before its body began: 404 for a
// missing file, 500 otherwise (the reason is logged, not sent).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Error(err, "export request failed", "path", r.URL.Path)
	if errors.Is(err, fs.ErrNotExist) {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	w.WriteHeader(http.StatusInternalServerError)
}

// abort ends a response whose body began: the connection is cut, so the
// client sees a broken transfer rather than a short file.
func (s *Server) abort(r *http.Request, err error) {
	if r.Context().Err() == nil {
		s.log.Error(err, "export stream broke off", "path", r.URL.Path)
	}
	panic(http.ErrAbortHandler)
}

// Serve serves TLS on ln with the configured certificate until ctx ends
// or the deadline passes, then shuts down, letting requests under way end
// within grace. It returns nil when it stopped for either reason.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	cert, err := tls.LoadX509KeyPair(s.cfg.CertFile, s.cfg.KeyFile)
	if err != nil {
		return fmt.Errorf("export server %s: certificate: %w", s.cfg.Export, err)
	}
	srv := NewHTTPServer(s, func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil }, s.log)
	stop := ctx.Done()
	var deadline <-chan time.Time
	if !s.cfg.Deadline.IsZero() {
		t := s.clock.NewTimer(s.cfg.Deadline.Sub(s.clock.Now()))
		defer t.Stop()
		deadline = t.C()
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-done:
		return fmt.Errorf("export server %s: %w", s.cfg.Export, err)
	case <-stop:
		s.log.Info("stopping")
	case <-deadline:
		s.log.Info("deadline reached", "deadline", s.cfg.Deadline)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	<-done
	return nil
}
