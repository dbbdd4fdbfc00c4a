package nodeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/go-logr/logr"

	"github.com/virtkit/virtkit/internal/wsstream"
)

// Server serves Ops over HTTP for virt-api: the handler of a node runs it on
// its node port (behind TLS that requires virt-api's client certificate; the
// Server itself does not authenticate). Ops errors map to 404 (ErrNotFound),
// 409 (ErrConflict), 503 (ErrUnavailable) and 500 (anything else); console and
// VNC are websockets (subprotocol plain.kubevirt.io) of binary messages.
type Server struct {
	ops Ops
	log logr.Logger
	mux *http.ServeMux
}

var _ http.Handler = (*Server)(nil)

// ServerOption changes a Server.
type ServerOption func(*Server)

// WithServerLogger sets where the server logs stream errors. The default
// discards them.
func WithServerLogger(l logr.Logger) ServerOption { return func(s *Server) { s.log = l } }

// NewServer returns the HTTP server over ops.
func NewServer(ops Ops, opts ...ServerOption) *Server {
	s := &Server{ops: ops, log: logr.Discard(), mux: http.NewServeMux()}
	for _, o := range opts {
		o(s)
	}
	base := pathPrefix + "{namespace}/" + vmiSegment + "/{name}/"
	s.mux.HandleFunc("PUT "+base+VerbPause, s.put(ops.Pause))
	s.mux.HandleFunc("PUT "+base+VerbUnpause, s.put(ops.Unpause))
	s.mux.HandleFunc("PUT "+base+VerbSoftReboot, s.put(ops.SoftReboot))
	s.mux.HandleFunc("PUT "+base+VerbReset, s.put(ops.Reset))
	s.mux.HandleFunc("GET "+base+VerbConsole, s.stream(VerbConsole, ops.Console))
	s.mux.HandleFunc("GET "+base+VerbVNC, s.stream(VerbVNC, ops.VNC))
	s.mux.HandleFunc("GET "+base+VerbScreenshot, s.screenshot)
	s.mux.HandleFunc("GET "+base+VerbGuestOSInfo, getJSON(ops.GuestOSInfo))
	s.mux.HandleFunc("GET "+base+VerbUserList, getJSON(ops.UserList))
	s.mux.HandleFunc("GET "+base+VerbFilesystemList, getJSON(ops.FilesystemList))
	s.mux.HandleFunc("PUT "+base+VerbFreeze, s.freeze)
	s.mux.HandleFunc("PUT "+base+VerbUnfreeze, s.put(ops.Unfreeze))
	return s
}

// ServeHTTP routes one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Server) put(op func(ctx context.Context, namespace, name string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := op(r.Context(), r.PathValue("namespace"), r.PathValue("name")); err != nil {
			writeError(w, err)
			return
		}
		w.WriteHeader(http.StatusOK)
	}
}

// getJSON serves what get returns as JSON.
func getJSON[T any](get func(ctx context.Context, namespace, name string) (T, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := get(r.Context(), r.PathValue("namespace"), r.PathValue("name"))
		if err != nil {
			writeError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
}

func (s *Server) freeze(w http.ResponseWriter, r *http.Request) {
	secs, err := strconv.ParseUint(r.URL.Query().Get("unfreezeTimeout"), 10, 32)
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(ErrorBody{Reason: "BadRequest", Message: "unfreezeTimeout: want a whole number of seconds"})
		return
	}
	if err := s.ops.Freeze(r.Context(), r.PathValue("namespace"), r.PathValue("name"), time.Duration(secs)*time.Second); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) screenshot(w http.ResponseWriter, r *http.Request) {
	b, err := s.ops.Screenshot(r.Context(), r.PathValue("namespace"), r.PathValue("name"))
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	_, _ = w.Write(b)
}

func (s *Server) stream(verb string, open func(ctx context.Context, namespace, name string) (io.ReadWriteCloser, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ns, name := r.PathValue("namespace"), r.PathValue("name")
		// Open the guest side first: a failure is still an HTTP status.
		guest, err := open(r.Context(), ns, name)
		if err != nil {
			writeError(w, err)
			return
		}
		ws, err := wsstream.Upgrader().Upgrade(w, r, nil)
		if err != nil {
			_ = guest.Close() // the upgrader has answered with an HTTP error
			return
		}
		if err := wsstream.Splice(r.Context(), wsstream.New(ws), guest); err != nil {
			s.log.Info("stream ended with an error", "verb", verb, "namespace", ns, "name", name, "error", err.Error())
		}
	}
}

func writeError(w http.ResponseWriter, err error) {
	code, reason := statusFor(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(ErrorBody{Reason: reason, Message: err.Error()})
}

// errorFromResponse rebuilds the error a handler answered with.
func errorFromResponse(code int, body []byte, what string) error {
	var eb ErrorBody
	msg := string(body)
	if json.Unmarshal(body, &eb) == nil && eb.Message != "" {
		msg = eb.Message
	}
	if s := sentinelFor(code); s != nil {
		return fmt.Errorf("%s: %s: %w", what, msg, s)
	}
	return fmt.Errorf("%s: HTTP %d: %s", what, code, msg)
}
