package admission

import (
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Verdict allows an object without errors and otherwise denies it the way
// the apiserver's own validation does, and KubeVirt's webhooks: 422
// Invalid, one cause per field, the message joining them all. Every
// webhook of virtkit that validates fields answers through it.
func Verdict(gk schema.GroupKind, name string, errs field.ErrorList) admission.Response {
	if len(errs) == 0 {
		return admission.Allowed("")
	}
	resp := admission.Denied(errs.ToAggregate().Error())
	causes := make([]metav1.StatusCause, 0, len(errs))
	for _, e := range errs {
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseType(e.Type), Message: e.ErrorBody(), Field: e.Field})
	}
	resp.Result.Code = http.StatusUnprocessableEntity
	resp.Result.Reason = metav1.StatusReasonInvalid
	resp.Result.Details = &metav1.StatusDetails{Group: gk.Group, Kind: gk.Kind, Name: name, Causes: causes}
	return resp
}
