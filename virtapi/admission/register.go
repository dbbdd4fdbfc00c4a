package admission

import (
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/virtkit/virtkit/virt/spec"
)

// Register serves both webhooks on srv at MutatePath and ValidatePath.
func Register(srv webhook.Server, scheme *runtime.Scheme, specOpts []spec.Option, opts ...ValidatorOption) {
	for path, h := range Handlers(scheme, specOpts, opts...) {
		srv.Register(path, h)
	}
}

// Handlers returns both webhooks as plain http.Handlers keyed by their
// path, for a server that also serves other things on the same port (as
// daemons/virt-api serves the subresources API).
func Handlers(scheme *runtime.Scheme, specOpts []spec.Option, opts ...ValidatorOption) map[string]http.Handler {
	return map[string]http.Handler{
		MutatePath:   &webhook.Admission{Handler: NewDefaulter(scheme, specOpts...)},
		ValidatePath: &webhook.Admission{Handler: NewValidator(scheme, append([]ValidatorOption{WithSpecOptions(specOpts...)}, opts...)...)},
	}
}
