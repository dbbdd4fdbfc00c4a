// Package instancetypes reads the instancetype and the preference a
// VirtualMachine names (spec.instancetype, spec.preference): the namespaced
// object in the VM's namespace for a namespaced kind, the cluster-wide one
// otherwise (virt/spec.InstancetypeKind). The VM controller keeps what it
// reads in ControllerRevisions; Specs reads a started VM's copies back, for
// virt-api's validating webhook (which checks the VM's template against
// them) and its expand-spec subresource.
package instancetypes
