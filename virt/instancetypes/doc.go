// Package instancetypes reads the instancetype and the preference a
// VirtualMachine names (spec.instancetype, spec.preference): the namespaced
// object in the VM's namespace for a namespaced kind, the cluster-wide one
// otherwise (virt/spec.InstancetypeKind). The VM controller keeps what it
// reads in ControllerRevisions; virt-api's validating webhook checks the
// VM's template against it.
package instancetypes
