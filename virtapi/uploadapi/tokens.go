package uploadapi

import (
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"
	uploadv1beta1 "kubevirt.io/containerized-data-importer-api/pkg/apis/upload/v1beta1"

	"github.com/virtkit/virtkit/virt/storage/upload"
	"github.com/virtkit/virtkit/virtapi/subresources"
)

// Group, Version and Resource of the API TokenServer serves.
const (
	Group    = "upload.cdi.kubevirt.io"
	Version  = "v1beta1"
	Resource = "uploadtokenrequests"
	// Prefix is the path of the group version.
	Prefix = "/apis/" + Group + "/" + Version
)

// maxRequest bounds the body of an UploadTokenRequest.
const maxRequest = 64 << 10

// TokenServer is the upload.cdi.kubevirt.io/v1beta1 API as an
// http.Handler, for paths below /apis/upload.cdi.kubevirt.io.
type TokenServer struct {
	key   func() (crypto.Signer, error)
	authn subresources.Authenticator
	authz subresources.Authorizer
	clock clock.PassiveClock
	log   logr.Logger
}

var _ http.Handler = (*TokenServer)(nil)

// TokenOption changes a TokenServer.
type TokenOption func(*TokenServer)

// WithClock sets the clock tokens' expiry is counted from.
func WithClock(c clock.PassiveClock) TokenOption { return func(s *TokenServer) { s.clock = c } }

// WithLogger sets where refused requests are logged.
func WithLogger(l logr.Logger) TokenOption { return func(s *TokenServer) { s.log = l } }

// NewTokenServer returns the API signing tokens with the key key returns
// (read at each request: the upload proxy must verify with its public
// half), authenticating callers with authn and authorizing them with
// authz.
func NewTokenServer(key func() (crypto.Signer, error), authn subresources.Authenticator, authz subresources.Authorizer, opts ...TokenOption) *TokenServer {
	s := &TokenServer{key: key, authn: authn, authz: authz, clock: clock.RealClock{}, log: logr.Discard()}
	for _, o := range opts {
		o(s)
	}
	return s
}

// ServeHTTP serves discovery to anyone and token requests to those RBAC
// lets create uploadtokenrequests in the namespace.
func (s *TokenServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		gv := metav1.GroupVersionForDiscovery{GroupVersion: Group + "/" + Version, Version: Version}
		switch path {
		case "/apis/" + Group:
			writeJSON(w, http.StatusOK, metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
				Name: Group, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv})
			return
		case Prefix:
			writeJSON(w, http.StatusOK, metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: gv.GroupVersion, APIResources: []metav1.APIResource{{Name: Resource, SingularName: "uploadtokenrequest",
					Namespaced: true, Kind: "UploadTokenRequest", Verbs: metav1.Verbs{"create"}, ShortNames: []string{"utr", "utrs"}}}})
			return
		}
	}
	rest, ok := strings.CutPrefix(path, Prefix+"/namespaces/")
	ns, res, _ := strings.Cut(rest, "/")
	gr := schema.GroupResource{Group: Group, Resource: Resource}
	if !ok || res != Resource || len(validation.IsDNS1123Label(ns)) > 0 {
		writeStatus(w, apierrors.NewNotFound(gr, ""))
		return
	}
	if r.Method != http.MethodPost {
		writeStatus(w, apierrors.NewMethodNotSupported(gr, r.Method))
		return
	}
	if err := s.create(w, r, ns); err != nil {
		var st apierrors.APIStatus
		if !errors.As(err, &st) {
			st = apierrors.NewInternalError(err)
		}
		s.log.Info("upload token refused", "namespace", ns, "error", err.Error())
		writeStatus(w, st)
	}
}

// create authorizes one UploadTokenRequest in ns and answers it with a
// token.
func (s *TokenServer) create(w http.ResponseWriter, r *http.Request, ns string) error {
	gr := schema.GroupResource{Group: Group, Resource: Resource}
	if s.authn == nil {
		return apierrors.NewUnauthorized("this server has no authenticator configured")
	}
	u, err := s.authn.Authenticate(r)
	if err != nil {
		return apierrors.NewUnauthorized(fmt.Sprintf("request is not authenticated: %v; call this API through the Kubernetes API server", err))
	}
	allowed, reason, err := s.authz.Authorize(r.Context(), u, subresources.Attributes{Verb: "create", Namespace: ns,
		Resource: Resource, Group: Group, Version: Version})
	if err != nil {
		return err
	}
	if !allowed {
		msg := fmt.Sprintf("User %q cannot create resource %q in API group %q in the namespace %q", u.Name, Resource, Group, ns)
		if reason != "" {
			msg += ": " + reason
		}
		return apierrors.NewForbidden(gr, "", errors.New(msg+"; CDI's cdi.kubevirt.io:edit ClusterRole grants it"))
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequest+1))
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("reading the request: %v", err))
	}
	if len(body) > maxRequest {
		return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("an UploadTokenRequest is at most %d bytes", maxRequest))
	}
	req := &uploadv1beta1.UploadTokenRequest{}
	if err := json.Unmarshal(body, req); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the body is not an UploadTokenRequest: %v", err))
	}
	gk, pvcName := schema.GroupKind{Group: Group, Kind: "UploadTokenRequest"}, field.NewPath("spec", "pvcName")
	if req.Spec.PvcName == "" {
		return apierrors.NewInvalid(gk, req.Name, field.ErrorList{field.Required(pvcName, "the claim to upload into")})
	}
	if errs := validation.IsDNS1123Subdomain(req.Spec.PvcName); len(errs) > 0 {
		return apierrors.NewInvalid(gk, req.Name, field.ErrorList{field.Invalid(pvcName, req.Spec.PvcName, strings.Join(errs, "; "))})
	}
	key, err := s.key()
	if err != nil {
		return fmt.Errorf("the token key: %w", err)
	}
	tok, err := upload.Issue(key, upload.Claims{Namespace: ns, Claim: req.Spec.PvcName, Expires: s.clock.Now().Add(upload.TokenLifetime)})
	if err != nil {
		return err
	}
	req.TypeMeta = metav1.TypeMeta{APIVersion: Group + "/" + Version, Kind: "UploadTokenRequest"}
	req.Namespace = ns
	req.Status.Token = tok
	writeJSON(w, http.StatusCreated, req)
	return nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeStatus(w http.ResponseWriter, st apierrors.APIStatus) {
	s := st.Status()
	s.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	s.Status = metav1.StatusFailure
	writeJSON(w, int(s.Code), s)
}
