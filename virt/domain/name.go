package domain

// DefaultNamespace is the namespace a VMI without one is named in, as the
// API server would default it.
const DefaultNamespace = "default"

// Name is the libvirt domain name of the VMI namespace/name, as KubeVirt
// names it: <namespace>_<name>. A Kubernetes namespace cannot hold "_", so
// the name splits back at its first "_" (virt-handler finds the VMI of a
// domain event that way). An empty namespace is DefaultNamespace.
//
// It is the one spelling of the rule: Convert names the domain with it, and
// virt.Machine, virt/launcher and the handler find the domain by it.
func Name(namespace, name string) string {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	return namespace + "_" + name
}
