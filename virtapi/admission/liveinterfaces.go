package admission

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	virtv1 "kubevirt.io/api/core/v1"
)

// liveInterfaces checks the interface hotplug the VM controller carries
// over to a running VMI, as KubeVirt allows it: an interface added with
// the bridge binding together with its secondary (Multus, not default)
// network; an interface's state set to absent (unplug), and such an
// interface removed with its network once it is gone. Nothing else of an
// interface or network may change.
func liveInterfaces(old, upd *virtv1.VirtualMachineInstanceSpec) field.ErrorList {
	ip := field.NewPath("spec", "domain", "devices", "interfaces")
	np := field.NewPath("spec", "networks")
	var errs field.ErrorList
	wasIface := map[string]virtv1.Interface{}
	for _, i := range old.Domain.Devices.Interfaces {
		wasIface[i.Name] = i
	}
	wasNet := map[string]virtv1.Network{}
	for _, n := range old.Networks {
		wasNet[n.Name] = n
	}
	nowNet := map[string]virtv1.Network{}
	for _, n := range upd.Networks {
		nowNet[n.Name] = n
	}
	nowIface := map[string]bool{}
	for k, i := range upd.Domain.Devices.Interfaces {
		nowIface[i.Name] = true
		prev, ok := wasIface[i.Name]
		switch {
		case !ok:
			n, hasNet := nowNet[i.Name]
			_, hadNet := wasNet[i.Name]
			switch {
			case i.Bridge == nil:
				errs = append(errs, field.Forbidden(ip.Index(k), "an interface hotplugged into a running VirtualMachineInstance must use the bridge binding"))
			case !hasNet || hadNet || n.Multus == nil || n.Multus.Default:
				errs = append(errs, field.Forbidden(ip.Index(k), "an interface hotplugged into a running VirtualMachineInstance comes with its own secondary Multus network"))
			case i.State == virtv1.InterfaceStateAbsent:
				errs = append(errs, field.Forbidden(ip.Index(k).Child("state"), "an interface cannot be hotplugged absent"))
			}
		case prev.State == virtv1.InterfaceStateAbsent && i.State != virtv1.InterfaceStateAbsent:
			errs = append(errs, field.Forbidden(ip.Index(k).Child("state"), "an interface being unplugged cannot come back; plug it again once it is gone"))
		default:
			a, b := prev.DeepCopy(), i.DeepCopy()
			a.State, b.State = "", ""
			if !equality.Semantic.DeepEqual(a, b) {
				errs = append(errs, field.Forbidden(ip.Index(k), "an interface of a running VirtualMachineInstance cannot change, except its state to absent (unplug)"))
			}
		}
	}
	for _, i := range old.Domain.Devices.Interfaces {
		if !nowIface[i.Name] && i.State != virtv1.InterfaceStateAbsent {
			errs = append(errs, field.Forbidden(ip, "interface "+i.Name+" is removed from a running VirtualMachineInstance only once unplugged (state absent)"))
		}
	}
	for k, n := range upd.Networks {
		prev, ok := wasNet[n.Name]
		if ok && !equality.Semantic.DeepEqual(prev, n) {
			errs = append(errs, field.Forbidden(np.Index(k), "a network of a running VirtualMachineInstance cannot change"))
		}
		if !ok && wasIface[n.Name].Name != "" {
			errs = append(errs, field.Forbidden(np.Index(k), "a network is added to a running VirtualMachineInstance only with its interface"))
		}
	}
	for _, n := range old.Networks {
		if _, ok := nowNet[n.Name]; !ok && nowIface[n.Name] {
			errs = append(errs, field.Forbidden(np, "network "+n.Name+" is removed from a running VirtualMachineInstance only with its interface"))
		}
	}
	return errs
}
