package admission

import (
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	clonev1 "kubevirt.io/api/clone/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/virtkit/virtkit/virt/clone"
)

// cloneSuffixLength is the length of the random suffix of a clone's
// generated target name, as KubeVirt's.
const cloneSuffixLength = 5

// randomSuffix is the default suffix of generated target names.
func randomSuffix() string { return rand.String(cloneSuffixLength) }

// defaultClone names the target of a new VirtualMachineClone that names
// none (clone.Default).
func (d *Defaulter) defaultClone(req admission.Request) admission.Response {
	c := &clonev1.VirtualMachineClone{}
	if err := d.decoder.Decode(req, c); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode VirtualMachineClone %s/%s: %w", req.Namespace, req.Name, err))
	}
	if req.Operation != "CREATE" || !clone.Default(c, d.suffix()) {
		return admission.Allowed("")
	}
	return patchResponse(req, c)
}

// validateClone admits a VirtualMachineClone: clone.Validate at creation,
// its spec fixed after.
func (v *Validator) validateClone(req admission.Request) admission.Response {
	c := &clonev1.VirtualMachineClone{}
	if err := v.decoder.Decode(req, c); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode VirtualMachineClone %s/%s: %w", req.Namespace, req.Name, err))
	}
	gk := clonev1.VirtualMachineCloneKind.GroupKind()
	if req.Operation == "UPDATE" {
		if c.DeletionTimestamp != nil {
			return admission.Allowed("the VirtualMachineClone is being deleted")
		}
		return v.specFixed(req, gk, c.Name, c.Spec, &clonev1.VirtualMachineClone{}, func(o runtime.Object) any { return o.(*clonev1.VirtualMachineClone).Spec })
	}
	return Verdict(gk, c.Name, clone.Validate(c))
}
