package handler

import "github.com/virtkit/virtkit/virt/spec"

// userMessage is how a user reads err on the VMI (a condition's message and
// the event that repeats it). An error that names fields of the VMI (from
// virt/domain's conversion, virt/network's or virt/storage's planning, or
// the hypervisor refusing the document) reads as the validating webhook's
// refusals do: "spec.domain.devices.disks[0].name: Invalid value: ...: why",
// several in brackets. Any other error reads as it is.
func userMessage(err error) string {
	if errs := spec.FieldErrors(err); len(errs) > 0 {
		return errs.ToAggregate().Error()
	}
	return err.Error()
}
