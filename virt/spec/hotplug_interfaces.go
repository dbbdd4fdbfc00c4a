package spec

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	virtv1 "kubevirt.io/api/core/v1"
)

// DeclaredInterfaces is KubeVirt's interface hotplug as its VM controller
// carries it to a running VMI (the network synchronizer): an interface of
// the template (tmpl) with the bridge binding that cur lacks joins cur,
// with its network; an interface the template sets absent is set absent
// in cur (unplug); an interface cur has absent that the VMI's status no
// longer lists (status: unplugged by now) leaves cur, with its network.
// It returns cur's interfaces and networks after these, and whether they
// changed. Other template changes are not its business (see
// InterfacesNeedRestart).
func DeclaredInterfaces(tmpl, cur *virtv1.VirtualMachineInstanceSpec, status []virtv1.VirtualMachineInstanceNetworkInterface) ([]virtv1.Interface, []virtv1.Network, bool) {
	ifaces := slices.Clone(cur.Domain.Devices.Interfaces)
	nets := slices.Clone(cur.Networks)
	have := map[string]int{}
	for i, iface := range ifaces {
		have[iface.Name] = i
	}
	for _, t := range tmpl.Domain.Devices.Interfaces {
		i, ok := have[t.Name]
		switch {
		case !ok && t.State != virtv1.InterfaceStateAbsent && t.Bridge != nil:
			n := networkNamed(tmpl.Networks, t.Name)
			if n == nil || n.Multus == nil || n.Multus.Default {
				continue // only a secondary network is hotplugged
			}
			ifaces = append(ifaces, t)
			nets = append(nets, *n)
		case ok && t.State == virtv1.InterfaceStateAbsent && ifaces[i].State != virtv1.InterfaceStateAbsent:
			ifaces[i].State = virtv1.InterfaceStateAbsent
		}
	}
	listed := statusNames(status)
	ifaces = slices.DeleteFunc(ifaces, func(i virtv1.Interface) bool {
		return i.State == virtv1.InterfaceStateAbsent && !listed[i.Name]
	})
	nets = withInterfaces(nets, ifaces)
	changed := !equality.Semantic.DeepEqual(ifaces, cur.Domain.Devices.Interfaces) || !equality.Semantic.DeepEqual(nets, cur.Networks)
	return ifaces, nets, changed
}

// UnpluggedFromTemplate drops from the template (tmpl) the interfaces it
// sets absent that are gone from the VMI (cur, nil when the VM has no
// running VMI) and its status, with their networks, as KubeVirt's VM
// controller does once an unplug is over. It returns the template's
// interfaces and networks after that, and whether they changed.
func UnpluggedFromTemplate(tmpl, cur *virtv1.VirtualMachineInstanceSpec, status []virtv1.VirtualMachineInstanceNetworkInterface) ([]virtv1.Interface, []virtv1.Network, bool) {
	inVMI := map[string]bool{}
	if cur != nil {
		for _, i := range cur.Domain.Devices.Interfaces {
			inVMI[i.Name] = true
		}
	}
	listed := statusNames(status)
	ifaces := slices.DeleteFunc(slices.Clone(tmpl.Domain.Devices.Interfaces), func(i virtv1.Interface) bool {
		return i.State == virtv1.InterfaceStateAbsent && !inVMI[i.Name] && !listed[i.Name]
	})
	if len(ifaces) == len(tmpl.Domain.Devices.Interfaces) {
		return tmpl.Domain.Devices.Interfaces, tmpl.Networks, false
	}
	return ifaces, withInterfaces(tmpl.Networks, ifaces), true
}

// InterfacesNeedRestart reports whether the template's interfaces and
// networks differ from the running VMI's (cur) in a way hotplug cannot
// bring about, as KubeVirt judges it: an interface or network of the VMI
// that the template dropped (rather than setting it absent), one that
// changed (the interface's state, and the model the VMI's defaults give it,
// aside), or a pod network the VMI lacks.
// What the template adds is hotplug's (DeclaredInterfaces) or, when it
// cannot be hotplugged, stays for the next start.
func InterfacesNeedRestart(tmpl, cur *virtv1.VirtualMachineInstanceSpec) bool {
	want := map[string]virtv1.Interface{}
	for _, i := range tmpl.Domain.Devices.Interfaces {
		want[i.Name] = i
	}
	for _, i := range cur.Domain.Devices.Interfaces {
		t, ok := want[i.Name]
		if !ok {
			return true
		}
		if !equality.Semantic.DeepEqual(normalIface(t), normalIface(i)) {
			return true
		}
	}
	podWanted, podHas := false, false
	for _, n := range tmpl.Networks {
		podWanted = podWanted || n.Pod != nil
	}
	for _, n := range cur.Networks {
		podHas = podHas || n.Pod != nil
		t := networkNamed(tmpl.Networks, n.Name)
		if t == nil || !equality.Semantic.DeepEqual(*t, n) {
			return true
		}
	}
	return podWanted && !podHas
}

// normalIface is i as InterfacesNeedRestart compares it: without its state,
// and with the model the VMI's defaults give it (virtio).
func normalIface(i virtv1.Interface) virtv1.Interface {
	c := *i.DeepCopy()
	c.State = ""
	if c.Model == "" && c.SRIOV == nil {
		c.Model = virtv1.VirtIO
	}
	return c
}

func networkNamed(nets []virtv1.Network, name string) *virtv1.Network {
	for i := range nets {
		if nets[i].Name == name {
			return &nets[i]
		}
	}
	return nil
}

// withInterfaces keeps the networks an interface of ifaces names.
func withInterfaces(nets []virtv1.Network, ifaces []virtv1.Interface) []virtv1.Network {
	used := map[string]bool{}
	for _, i := range ifaces {
		used[i.Name] = true
	}
	return slices.DeleteFunc(slices.Clone(nets), func(n virtv1.Network) bool { return !used[n.Name] })
}

func statusNames(status []virtv1.VirtualMachineInstanceNetworkInterface) map[string]bool {
	out := map[string]bool{}
	for _, s := range status {
		if s.Name != "" {
			out[s.Name] = true
		}
	}
	return out
}
