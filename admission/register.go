package admission

import (
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/virtkit/virtkit/virt/spec"
)

// Register serves both webhooks on srv at MutatePath and ValidatePath.
func Register(srv webhook.Server, scheme *runtime.Scheme, specOpts []spec.Option, opts ...ValidatorOption) {
	srv.Register(MutatePath, &webhook.Admission{Handler: NewDefaulter(scheme, specOpts...)})
	srv.Register(ValidatePath, &webhook.Admission{Handler: NewValidator(scheme, append([]ValidatorOption{WithSpecOptions(specOpts...)}, opts...)...)})
}
