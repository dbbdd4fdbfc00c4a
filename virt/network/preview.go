package network

import (
	"fmt"
	"hash/fnv"
	"strconv"

	virtv1 "kubevirt.io/api/core/v1"
)

// PreviewPlan is the plan the planner would make for vmi without looking at
// a pod: one tap per interface, named as MakePlan names it (tap0 on the pod
// network, "tap" and the pod interface's hash on a secondary one; tap and
// the interface's place for one whose network is missing), its own MAC or
// a locally administered one derived from the VMI and interface names, MTU
// 1500, and no addresses. It lets a program show a VMI's domain without a
// pod (examples/convert) and gives tests a realistic plan.
func PreviewPlan(vmi *virtv1.VirtualMachineInstance) Plan {
	plan := Plan{}
	podNames := PodInterfaceNames(vmi.Spec.Networks)
	for i, iface := range vmi.Spec.Domain.Devices.Interfaces {
		binding := BindingMasquerade
		if iface.Bridge != nil {
			binding = BindingBridge
		}
		mac := iface.MacAddress
		if mac == "" {
			mac = previewMAC(vmi.Namespace + "/" + vmi.Name + "/" + iface.Name)
		}
		tap := "tap" + strconv.Itoa(i)
		if podName, ok := podNames[iface.Name]; ok {
			tap = tapName(podName)
		}
		plan[iface.Name] = InterfacePlan{
			Interface: iface.Name,
			Binding:   binding,
			TapName:   tap,
			MAC:       mac,
			MTU:       1500,
		}
	}
	return plan
}

// previewMAC derives a stable, locally administered unicast MAC from key.
func previewMAC(key string) string {
	h := fnv.New64a()
	h.Write([]byte(key))
	s := h.Sum64()
	return fmt.Sprintf("02:%02x:%02x:%02x:%02x:%02x", byte(s>>32), byte(s>>24), byte(s>>16), byte(s>>8), byte(s))
}
