package subresources

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virtapi/frontproxy"
)

// vmResource and vmiResource are what KubeVirt's virt-api names in its
// errors: singular, in the kubevirt.io group
// ("virtualmachine.kubevirt.io \"vm1\" not found").
func vmResource() schema.GroupResource  { return virtv1.Resource("virtualmachine") }
func vmiResource() schema.GroupResource { return virtv1.Resource("virtualmachineinstance") }

// Messages KubeVirt's virt-api answers with; clients and tests match them.
const (
	msgVMNotRunning     = "VM is not running"
	msgVMIRunning       = "VMI is not running"
	msgVMAlreadyRunning = "VM is already running"
	msgUnderway         = "unable to complete request: stop/start already underway"
)

// writeStatus writes st as the JSON body of an error response.
func writeStatus(w http.ResponseWriter, st *metav1.Status) {
	st.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	st.Status = metav1.StatusFailure
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(st)
}

// statusOf turns a handler error into the Status to answer with: API status
// errors as they are, anything else as 500.
func statusOf(err error) *metav1.Status {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		st := se.Status()
		return &st
	}
	return internalError(err)
}

func internalError(err error) *metav1.Status {
	return &apierrors.NewInternalError(err).ErrStatus
}

func notFoundPath(path string) *metav1.Status {
	return &metav1.Status{Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: fmt.Sprintf("the server could not find the requested resource %s; the calls are PUT %s/namespaces/NAMESPACE/virtualmachines/NAME/{start,stop,restart,migrate,addvolume,removevolume,evacuatecancel}, "+
			"PUT .../virtualmachineinstances/NAME/{pause,unpause,softreboot,addvolume,removevolume,evacuatecancel}, GET (websocket) .../virtualmachineinstances/NAME/{console,vnc}, "+
			"GET .../virtualmachines/NAME/expand-spec and PUT .../namespaces/NAMESPACE/expand-vm-spec", path, Prefix)}
}

func methodNotAllowed(method, key, want string) *metav1.Status {
	return &metav1.Status{Code: http.StatusMethodNotAllowed, Reason: metav1.StatusReasonMethodNotAllowed,
		Message: fmt.Sprintf("%s is not supported on %s: use %s", method, key, want)}
}

func unauthorized(err error) *metav1.Status {
	return &metav1.Status{Code: http.StatusUnauthorized, Reason: metav1.StatusReasonUnauthorized,
		Message: fmt.Sprintf("request is not authenticated: %v; call this API through the Kubernetes API server "+
			"(kubectl, virtctl, or kubectl get --raw %s), which authenticates you and forwards the request", err, Prefix)}
}

// forbidden is the 403 a user without RBAC for the subresource gets, worded
// as the apiserver words its own, plus what to grant.
func forbidden(u frontproxy.User, a Attributes, reason string) *metav1.Status {
	gr := schema.GroupResource{Group: Group, Resource: a.Resource}
	if a.Subresource != "" {
		gr.Resource += "/" + a.Subresource
	}
	msg := fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", u.Name, a.Verb, gr.Resource, Group, a.Namespace)
	if reason != "" {
		msg += ": " + reason
	}
	msg += fmt.Sprintf("; ask for a Role granting verb %q on %q in API group %q (KubeVirt's kubevirt.io:edit ClusterRole has it)", a.Verb, gr.Resource, Group)
	st := apierrors.NewForbidden(gr, a.Name, errors.New(msg)).ErrStatus
	return &st
}

// badRequest is a 400 with a message.
func badRequest(format string, args ...any) error {
	return apierrors.NewBadRequest(fmt.Sprintf(format, args...))
}

// conflict is KubeVirt's 409 on a VM or VMI.
func conflict(gr schema.GroupResource, name, format string, args ...any) error {
	return apierrors.NewConflict(gr, name, fmt.Errorf(format, args...))
}

// writeFailure turns the error of a write virt-api made on the user's behalf
// into the answer: a failed JSON patch test (the object changed meanwhile)
// and a conflict are 409, invalid and not found pass through, anything else
// is 500 naming what was written.
func writeFailure(gr schema.GroupResource, name, what string, err error) error {
	switch {
	case isPatchTestFailure(err), apierrors.IsConflict(err):
		return conflict(gr, name, "%s: the object changed while the request was processed; retry: %v", what, err)
	case apierrors.IsInvalid(err), apierrors.IsNotFound(err), apierrors.IsBadRequest(err):
		return err
	}
	return apierrors.NewInternalError(fmt.Errorf("%s: %w", what, err))
}

// isPatchTestFailure reports whether err is the apiserver refusing a JSON
// patch whose test operation failed.
func isPatchTestFailure(err error) bool {
	var se apierrors.APIStatus
	if !errors.As(err, &se) || se.Status().Code != http.StatusUnprocessableEntity {
		return false
	}
	m := se.Status().Message
	return strings.Contains(m, "testing value") || strings.Contains(m, "test operation does not apply")
}
