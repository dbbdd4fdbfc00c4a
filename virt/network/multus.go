package network

import (
	"encoding/json"
	"fmt"
	"strconv"
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

// PodInterfaceNames maps each network of networks to its interface in the
// launcher pod: the pod network (or a Multus network with default: true)
// to PodInterfaceName, the other Multus networks, in order, to net1, net2,
// ... (KubeVirt's ordinal naming). A network with neither source has none.
func PodInterfaceNames(networks []virtv1.Network) map[string]string {
	out := map[string]string{}
	ordinal := 0
	for _, n := range networks {
		if _, dup := out[n.Name]; dup {
			continue
		}
		switch {
		case n.Pod != nil, n.Multus != nil && n.Multus.Default:
			out[n.Name] = PodInterfaceName
		case n.Multus != nil:
			ordinal++
			out[n.Name] = "net" + strconv.Itoa(ordinal)
		}
	}
	return out
}

// MultusNetworks is the value of MultusNetworksAnnotation for vmi's launcher
// pod ("" when it joins no secondary network): each Multus network that is
// not the default, with its interface (PodInterfaceNames). A networkName
// "NAMESPACE/NAME" names another namespace's attachment; "NAME" one in
// vmi's namespace, as in KubeVirt.
func MultusNetworks(vmi *virtv1.VirtualMachineInstance) (string, error) {
	names := PodInterfaceNames(vmi.Spec.Networks)
	var out []MultusSelection
	for _, n := range vmi.Spec.Networks {
		if n.Multus == nil || n.Multus.Default {
			continue
		}
		ns, name := vmi.Namespace, n.Multus.NetworkName
		if before, after, found := strings.Cut(name, "/"); found {
			ns, name = before, after
		}
		out = append(out, MultusSelection{Name: name, Namespace: ns, Interface: names[n.Name]})
	}
	if len(out) == 0 {
		return "", nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", fmt.Errorf("network: the Multus networks of VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	return string(b), nil
}
