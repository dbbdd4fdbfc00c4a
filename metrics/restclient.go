package metrics

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
)

// ClientRequestsName is the series [ClientRequests] exports (KubeVirt's
// name; the labels are component, verb, resource and code).
const ClientRequestsName = "kubevirt_rest_client_requests_total"

// ClientRequests counts the requests components make to the apiserver, by
// component, Kubernetes verb (get, list, watch, create, update, patch,
// delete, deletecollection), resource (with its subresource:
// "virtualmachineinstances/status") and HTTP status code ("error" when no
// response came).
type ClientRequests struct {
	vec *prometheus.CounterVec
}

// NewClientRequests registers the counter into reg.
func NewClientRequests(reg prometheus.Registerer) (*ClientRequests, error) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: ClientRequestsName,
		Help: "Number of requests to the apiserver, by component, Kubernetes verb, resource and status code.",
	}, []string{"component", "verb", "resource", "code"})
	if err := reg.Register(vec); err != nil {
		return nil, err
	}
	return &ClientRequests{vec: vec}, nil
}

// Wrap returns a copy of rc whose requests are counted as component's.
func (c *ClientRequests) Wrap(component string, rc *rest.Config) *rest.Config {
	out := rest.CopyConfig(rc)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &countingTransport{next: rt, component: component, vec: c.vec}
	})
	return out
}

type countingTransport struct {
	next      http.RoundTripper
	component string
	vec       *prometheus.CounterVec
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	verb, resource := RequestVerb(req.Method, req.URL.Path, req.URL.Query().Get("watch")), RequestResource(req.URL.Path)
	t.vec.WithLabelValues(t.component, verb, resource, code).Inc()
	return resp, err
}

// WrappedTransport lets client-go see through the counting layer.
func (t *countingTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

// RequestVerb is the Kubernetes verb of a request to the apiserver.
func RequestVerb(method, path, watch string) string {
	named := resourceName(path) != ""
	switch method {
	case http.MethodGet, http.MethodHead:
		switch {
		case watch == "true" || watch == "1" || strings.Contains(path, "/watch/"):
			return "watch"
		case named:
			return "get"
		default:
			return "list"
		}
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		if named {
			return "delete"
		}
		return "deletecollection"
	}
	return strings.ToLower(method)
}

// RequestResource is the resource (and subresource) a path names:
// "pods", "virtualmachineinstances/status"; the path itself for
// non-resource paths ("/healthz").
func RequestResource(path string) string {
	parts := resourceParts(path)
	if parts == nil {
		return path
	}
	if len(parts) >= 3 {
		return parts[0] + "/" + parts[2]
	}
	return parts[0]
}

// resourceName is the object name a path names, if any.
func resourceName(path string) string {
	if parts := resourceParts(path); len(parts) >= 2 {
		return parts[1]
	}
	return ""
}

// resourceParts splits a resource path into resource, name and
// subresource: /api/v1/namespaces/ns/pods/p/status -> [pods p status].
func resourceParts(path string) []string {
	s := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(s) >= 2 && s[0] == "api":
		s = s[2:]
	case len(s) >= 3 && s[0] == "apis":
		s = s[3:]
	default:
		return nil
	}
	if len(s) > 0 && s[0] == "watch" {
		s = s[1:]
	}
	if len(s) >= 3 && s[0] == "namespaces" {
		s = s[2:]
	}
	if len(s) == 0 {
		return nil
	}
	return s
}
