package network

import (
	"encoding/json"
	"strings"

	virtv1 "kubevirt.io/api/core/v1"
)

// MultusNetworksAnnotation is Multus's pod annotation of the networks a pod
// joins besides its own: a JSON list of MultusSelection, or the short form
// NETWORK@INTERFACE,...
const MultusNetworksAnnotation = "k8s.v1.cni.cncf.io/networks"

// MultusSelection is one network in MultusNetworksAnnotation's JSON form,
// with the fields KubeVirt's launcher pods set: the
// NetworkAttachmentDefinition's name and namespace, and the interface the
// pod gets.
type MultusSelection struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Interface string `json:"interface,omitempty"`
}

// MultusNetworks is the value of MultusNetworksAnnotation for vmi's launcher
// pod ("" when it joins no secondary network): each Multus network that is
// not the default and whose interface is not being unplugged (state
// absent), with its pod interface (PodInterfaceNames). A networkName
// "NAMESPACE/NAME" names another namespace's attachment; "NAME" one in
// vmi's namespace, as in KubeVirt.
func MultusNetworks(vmi *virtv1.VirtualMachineInstance) string {
	names := PodInterfaceNames(vmi.Spec.Networks)
	plugged := map[string]bool{}
	for _, iface := range vmi.Spec.Domain.Devices.Interfaces {
		plugged[iface.Name] = iface.State != virtv1.InterfaceStateAbsent
	}
	var out []MultusSelection
	for _, n := range vmi.Spec.Networks {
		if n.Multus == nil || n.Multus.Default || !plugged[n.Name] {
			continue
		}
		ns, name := vmi.Namespace, n.Multus.NetworkName
		if before, after, found := strings.Cut(name, "/"); found {
			ns, name = before, after
		}
		out = append(out, MultusSelection{Name: name, Namespace: ns, Interface: names[n.Name]})
	}
	if len(out) == 0 {
		return ""
	}
	b, _ := json.Marshal(out) // strings only: it cannot fail
	return string(b)
}
