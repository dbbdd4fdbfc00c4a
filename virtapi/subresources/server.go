package subresources

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-logr/logr"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virtapi/frontproxy"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
)

// Group and Version of the API this package serves.
const (
	Group   = virtv1.SubresourceGroupName
	Version = "v1"
	// Prefix is the path every endpoint of the group version lives below.
	Prefix = "/apis/" + Group + "/" + Version
)

// Server is the subresources.kubevirt.io/v1 API as an http.Handler. Serve it
// over TLS that requests (but does not require) client certificates, so the
// aggregator's front-proxy certificate reaches the Authenticator.
type Server struct {
	client   client.Client
	authn    Authenticator
	authz    Authorizer
	nodeOps  func(ctx context.Context, node string) (nodeapi.Ops, error)
	version  VersionInfo
	log      logr.Logger
	observer Observer
	routes   map[string]route
	// drainTaint finds a node's drain taint (WithDrainTaint).
	drainTaint DrainTaintFunc
	// expander serves the expand calls (WithExpander); nil: not served.
	expander Expander
	// dialGuest reaches a guest's port for portforward (WithGuestDialer).
	dialGuest GuestDialer
}

var _ http.Handler = (*Server)(nil)

// Option changes a Server.
type Option func(*Server)

// WithAuthenticator sets who a request comes from. Without one, every call
// below namespaces/ is refused with 401: use a frontproxy.Authenticator.
func WithAuthenticator(a Authenticator) Option { return func(s *Server) { s.authn = a } }

// WithAuthorizer sets how calls are authorized. The default posts a
// SubjectAccessReview with the server's client.
func WithAuthorizer(a Authorizer) Option { return func(s *Server) { s.authz = a } }

// WithLocator sets how the handler of a VMI's node is found; each node verb
// then calls it with a nodeapi.Client. Without a locator or WithNodeOps the
// node verbs answer 503.
func WithLocator(l nodeapi.Locator, opts ...nodeapi.ClientOption) Option {
	return func(s *Server) { s.nodeOps = nodeapi.OpsOf(l, opts...) }
}

// WithNodeOps sets the node verbs' Ops per node directly, for an integrator
// that runs handler and API in one process, or a test with a nodeapi.Fake.
func WithNodeOps(f func(ctx context.Context, node string) (nodeapi.Ops, error)) Option {
	return func(s *Server) { s.nodeOps = f }
}

// WithVersion sets what .../v1/version reports. The default is read from the
// binary's build information.
func WithVersion(v VersionInfo) Option { return func(s *Server) { s.version = v } }

// WithLogger sets the logger for failed calls. The default discards.
func WithLogger(l logr.Logger) Option { return func(s *Server) { s.log = l } }

// New returns the API server writing through c, which needs (as KubeVirt's
// kubevirt-apiserver ClusterRole grants): get and patch on virtualmachines
// and virtualmachines/status, get and patch on virtualmachineinstances,
// create on virtualmachineinstancemigrations, list and delete on pods,
// create on subjectaccessreviews. It reads no Nodes.
func New(c client.Client, opts ...Option) *Server {
	s := &Server{
		client:    c,
		authz:     &SubjectAccessReviewer{Client: c},
		version:   BuildVersion(),
		log:       logr.Discard(),
		observer:  nopObserver{},
		dialGuest: defaultGuestDialer(),
	}
	for _, o := range opts {
		o(s)
	}
	s.routes = s.routeTable()
	return s
}

// request is one authorized call of a namespaced subresource.
type request struct {
	w         http.ResponseWriter
	r         *http.Request
	namespace string
	name      string
	// args are the path segments after the subresource's own (the port and
	// protocol of portforward).
	args []string
	user frontproxy.User
}

// route is one subresource: its HTTP method and handler. The RBAC verb
// follows from the method (PUT: update, GET: get), as in KubeVirt.
type route struct {
	method string
	handle func(ctx context.Context, req *request) error
}

// routeTable lists every namespaced subresource, keyed "resource/subresource".
func (s *Server) routeTable() map[string]route {
	put := func(h func(context.Context, *request) error) route { return route{http.MethodPut, h} }
	get := func(h func(context.Context, *request) error) route { return route{http.MethodGet, h} }
	routes := map[string]route{
		"virtualmachines/start":                  put(s.start),
		"virtualmachines/stop":                   put(s.stop),
		"virtualmachines/restart":                put(s.restart),
		"virtualmachines/migrate":                put(s.migrate),
		"virtualmachines/addvolume":              put(s.vmAddVolume),
		"virtualmachines/removevolume":           put(s.vmRemoveVolume),
		"virtualmachines/evacuatecancel":         put(s.vmEvacuateCancel),
		"virtualmachineinstances/pause":          put(s.pause),
		"virtualmachineinstances/unpause":        put(s.unpause),
		"virtualmachineinstances/softreboot":     put(s.softReboot),
		"virtualmachineinstances/reset":          put(s.reset),
		"virtualmachineinstances/addvolume":      put(s.vmiAddVolume),
		"virtualmachineinstances/removevolume":   put(s.vmiRemoveVolume),
		"virtualmachineinstances/evacuatecancel": put(s.vmiEvacuateCancel),
		"virtualmachineinstances/console":        get(s.console),
		"virtualmachineinstances/vnc":            get(s.vnc),
		"virtualmachineinstances/vnc/screenshot": get(s.screenshot),
		"virtualmachineinstances/portforward":    get(s.vmiPortForward),
		"virtualmachines/portforward":            get(s.vmPortForward),
		"virtualmachineinstances/guestosinfo":    get(agentGet(s, "guestosinfo", nodeapi.Ops.GuestOSInfo)),
		"virtualmachineinstances/userlist":       get(agentGet(s, "userlist", nodeapi.Ops.UserList)),
		"virtualmachineinstances/filesystemlist": get(agentGet(s, "filesystemlist", nodeapi.Ops.FilesystemList)),
		"virtualmachineinstances/freeze":         put(s.freeze),
		"virtualmachineinstances/unfreeze":       put(s.unfreeze),
	}
	if s.expander != nil {
		routes["virtualmachines/expand-spec"] = get(s.expandSpec)
		routes[ExpandVMSpecResource] = put(s.expandVMSpec)
	}
	return routes
}

// rbacVerb is the Kubernetes verb of an HTTP method on a named object.
func rbacVerb(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		return "get"
	case http.MethodPut:
		return "update"
	case http.MethodPost:
		return "create"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return strings.ToLower(method)
}

// ServeHTTP serves discovery without authentication (the aggregator needs
// it), and every namespaced call after authenticating and authorizing it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.serveDiscovery(w, r) {
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, Prefix+"/namespaces/")
	parts := strings.Split(rest, "/")
	if ok && len(parts) == 2 && parts[0] != "" && parts[1] == ExpandVMSpecResource && s.expander != nil {
		// The one call on a namespaced resource rather than an object's
		// subresource: expand the VM of the body.
		parts = []string{parts[0], ExpandVMSpecResource, "", ""}
	} else if !ok || len(parts) < 4 || parts[0] == "" || parts[2] == "" || parts[3] == "" {
		writeStatus(w, notFoundPath(r.URL.Path))
		return
	}
	req := &request{w: w, r: r, namespace: parts[0], name: parts[2]}
	// The subresource is the rest of the path (vnc/screenshot), except
	// that portforward carries its port and protocol there, which RBAC does
	// not see: as KubeVirt's authorizer.
	sub := strings.Join(parts[3:], "/")
	if parts[3] == portForwardSubresource {
		sub, req.args = portForwardSubresource, parts[4:]
	}
	key := parts[1] + "/" + sub
	if parts[1] == ExpandVMSpecResource {
		key = ExpandVMSpecResource
	}
	rt, ok := s.routes[key]
	if !ok {
		writeStatus(w, notFoundPath(r.URL.Path))
		return
	}
	rec := &statusRecorder{ResponseWriter: w}
	w, req.w = rec, rec
	defer func() { s.observer.Call(parts[1], sub, rec.outcome(rt.method)) }()
	if r.Method != rt.method {
		writeStatus(w, methodNotAllowed(r.Method, key, rt.method))
		return
	}
	if s.authn == nil {
		writeStatus(w, unauthorized(fmt.Errorf("this server has no authenticator configured")))
		return
	}
	user, err := s.authn.Authenticate(r)
	if err != nil {
		writeStatus(w, unauthorized(err))
		return
	}
	req.user = user
	attrs := Attributes{Namespace: req.namespace, Name: req.name, Verb: rbacVerb(r.Method),
		Resource: parts[1], Subresource: sub}
	allowed, reason, err := s.authz.Authorize(r.Context(), user, attrs)
	if err != nil {
		s.log.Error(err, "authorization failed", "user", user.Name, "resource", key)
		writeStatus(w, internalError(fmt.Errorf("authorizing %s %s: %w", attrs.Verb, key, err)))
		return
	}
	if !allowed {
		writeStatus(w, forbidden(user, attrs, reason))
		return
	}
	if err := rt.handle(r.Context(), req); err != nil {
		st := statusOf(err)
		if st.Code >= http.StatusInternalServerError {
			s.log.Error(err, "call failed", "resource", key, "namespace", req.namespace, "name", req.name)
		}
		writeStatus(w, st)
	}
}

// accepted answers a VM verb that was written, as KubeVirt does.
func (req *request) accepted() error {
	req.w.WriteHeader(http.StatusAccepted)
	return nil
}

// ok answers a VMI verb the node carried out, as KubeVirt does.
func (req *request) ok() error {
	req.w.WriteHeader(http.StatusOK)
	return nil
}
