package subresources

import "net/http"

// Observer is told what the server does, for metrics; metrics.Subresources
// is one. Its methods must be safe for concurrent use and return at once.
type Observer interface {
	// Call is told the outcome of each call of a subresource the server
	// routes, authorized or not: resource ("virtualmachines"), subresource
	// ("start") and the HTTP status code (101 for a stream that opened).
	Call(resource, subresource string, code int)
	// Stream is told that a console or VNC stream (subresource "console" or
	// "vnc") of namespace/name opened; the server calls the returned
	// function when the stream ends.
	Stream(subresource, namespace, name string) (closed func())
}

// WithObserver sets who is told about calls and streams. The default tells no one.
func WithObserver(o Observer) Option { return func(s *Server) { s.observer = o } }

type nopObserver struct{}

func (nopObserver) Call(string, string, int)                      {}
func (nopObserver) Stream(string, string, string) (closed func()) { return func() {} }

// statusRecorder remembers the status code a handler wrote. A websocket
// upgrade hijacks the connection through Unwrap and writes none.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController (the websocket upgrader) reach the
// connection.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// outcome is the status code of a call whose handler returned: what it
// wrote, else 101 for a stream (its connection was hijacked), else 200.
func (r *statusRecorder) outcome(method string) int {
	switch {
	case r.code != 0:
		return r.code
	case method == http.MethodGet:
		return http.StatusSwitchingProtocols
	}
	return http.StatusOK
}
