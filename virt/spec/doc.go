// Package spec defaults and validates kubevirt.io/v1 VirtualMachine and
// VirtualMachineInstance specs and expands instancetypes and preferences, as
// pure functions returning field.ErrorList with exact field paths.
//
// It owns KubeVirt's admission semantics: DefaultVMI/ValidateVMI (the VMI
// webhooks), DefaultVM/ValidateVM (the VM webhooks), NewVMIFromVM (the VMI a
// VM's template yields), ApplyInstancetype/ApplyAnnotations (instancetype and
// preference expansion, the caller supplying the objects), and the single
// table of KubeVirt fields virtkit refuses because it does not implement them
// yet (unsupported.go, UnsupportedFeatures). FieldErrors collects the field
// errors other packages' errors carry (their FieldError methods), so that
// every refusal of a spec reads as the webhook's.
//
// It sits at the bottom of the tree: it imports only API types and
// apimachinery, never another virtkit package, and performs no I/O. Cluster
// settings KubeVirt reads from its configuration object arrive as Options;
// nothing is global.
//
// See docs/sdk/spec.md.
package spec
