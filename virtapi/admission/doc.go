// Package admission holds virtkit's admission webhooks for kubevirt.io/v1
// VirtualMachines and VirtualMachineInstances: a mutating webhook that
// applies virt/spec's defaulting and a validating webhook that applies
// virt/spec's validation, answering with the field paths and reasons, as
// KubeVirt's virt-api does. daemons/virt-api serves them; an integrator can
// register them on any controller-runtime webhook server ([Register]).
//
// [Configurations] returns the webhook configurations to install. They
// intercept only CREATE and UPDATE: an unavailable virt-api can block
// creating or changing a VM (the failure policy is Fail, so nothing
// unvalidated is stored) but never deleting one.
//
// The package decides nothing about clusters beyond the request in hand: no
// client, no cache, no globals.
package admission
