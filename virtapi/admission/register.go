package admission

import (
	"context"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/virtkit/virtkit/virt/spec"
)

// SpecOptions returns the virt/spec options in force when it is called,
// read from the KubeVirt CR (controllers.Live), so that a change of the
// cluster's settings reaches the webhooks without a restart.
type SpecOptions func(ctx context.Context) ([]spec.Option, error)

// Static is a SpecOptions that never changes.
func Static(opts ...spec.Option) SpecOptions {
	return func(context.Context) ([]spec.Option, error) { return opts, nil }
}

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
	return HandlersFrom(scheme, Static(specOpts...), opts...)
}

// HandlersFrom is Handlers with the spec options read at each request.
func HandlersFrom(scheme *runtime.Scheme, specOpts SpecOptions, opts ...ValidatorOption) map[string]http.Handler {
	v := NewValidator(scheme, append([]ValidatorOption{WithSpecOptionsFrom(specOpts)}, opts...)...)
	d := NewDefaulterFrom(scheme, specOpts)
	// The reader WithInstancetypes gives also resolves inferFromVolume.
	d.instancetypes = v.instancetypes
	return map[string]http.Handler{
		MutatePath:   &webhook.Admission{Handler: d},
		ValidatePath: &webhook.Admission{Handler: v},
	}
}
