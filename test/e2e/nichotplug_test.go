package e2e

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/virt/network"
)

// Interface hotplug end to end, as KubeVirt users do it: a running VM's
// template gains a bridge interface on a Multus network; the VMI gets it,
// its launcher pod asks for the network, the node attaches it, the handler
// plugs a NIC the guest sees and leases an address on, with no restart
// asked for. Setting the interface absent unplugs it: the guest loses the
// NIC, the pod its interface, and the interface leaves the VMI and then
// the template.
func TestInterfaceHotplug(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	nad := w.bridgeNetwork(ctx, t, "default", "hot-net", "vkh", "192.168.178.0/24")

	vm := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
	vm.Name = "nic-hotplug"
	must(t, w.c.Create(ctx, vm))
	v := w.waitRunning(ctx, t, vm)
	serial := w.serialLog(ctx, t, v)
	waitFile(ctx, t, serial, testguest.ReadyMarker)
	before := lastHeartbeat(t, serial)

	// Plug: the template gains the interface and its network.
	w.editVM(ctx, t, vm, func(vm *virtv1.VirtualMachine) {
		s := &vm.Spec.Template.Spec
		s.Networks = append(s.Networks, virtv1.Network{Name: "hot", NetworkSource: virtv1.NetworkSource{
			Multus: &virtv1.MultusNetwork{NetworkName: "hot-net"}}})
		s.Domain.Devices.Interfaces = append(s.Domain.Devices.Interfaces, virtv1.Interface{Name: "hot",
			InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Bridge: &virtv1.InterfaceBridge{}}})
	})
	lease := regexp.MustCompile(`VIRTKIT-NET eth1 ip=(192\.168\.178\.\d+)/24 `)
	line, err := testguest.WaitLine(ctx, serial, lease)
	must(t, err)
	ip := lease.FindStringSubmatch(line)[1]
	v = w.waitVMI(ctx, t, vm, "reporting the plugged interface", func(v *virtv1.VirtualMachineInstance) bool {
		return len(v.Status.Interfaces) == 2 && v.Status.Interfaces[1].Name == "hot" && v.Status.Interfaces[1].IP == ip
	})
	if got := v.Status.Interfaces[1].PodInterfaceName; got != network.SecondaryPodInterfaceName("hot") {
		t.Errorf("the plugged interface's pod interface %q, want %q", got, network.SecondaryPodInterfaceName("hot"))
	}
	if got := w.launcherNetworks(ctx, t, v); got != `[{"name":"hot-net","namespace":"default","interface":"`+network.SecondaryPodInterfaceName("hot")+`"}]` {
		t.Errorf("the launcher pod's networks %q after the plug", got)
	}
	w.noRestartRequired(ctx, t, vm)

	// Unplug: the template sets it absent.
	w.editVM(ctx, t, vm, func(vm *virtv1.VirtualMachine) {
		for i := range vm.Spec.Template.Spec.Domain.Devices.Interfaces {
			if iface := &vm.Spec.Template.Spec.Domain.Devices.Interfaces[i]; iface.Name == "hot" {
				iface.State = virtv1.InterfaceStateAbsent
			}
		}
	})
	if _, err := testguest.WaitLine(ctx, serial, regexp.MustCompile(`VIRTKIT-NET eth1 removed`)); err != nil {
		t.Errorf("the guest losing the NIC: %v", err)
	}
	w.waitVMI(ctx, t, vm, "without the unplugged interface in spec and status", func(v *virtv1.VirtualMachineInstance) bool {
		return len(v.Status.Interfaces) == 1 && len(v.Spec.Domain.Devices.Interfaces) == 1 && len(v.Spec.Networks) == 1
	})
	eventually(ctx, t, "the template without the unplugged interface", func() (bool, string) {
		must(t, w.c.Get(ctx, client.ObjectKeyFromObject(vm), vm))
		s := vm.Spec.Template.Spec
		return len(s.Domain.Devices.Interfaces) == 1 && len(s.Networks) == 1, fmt.Sprint(s.Domain.Devices.Interfaces, s.Networks)
	})
	if got := w.launcherNetworks(ctx, t, v); got != "" {
		t.Errorf("the launcher pod's networks %q after the unplug, want none", got)
	}
	w.noRestartRequired(ctx, t, vm)
	if after := lastHeartbeat(t, serial); after < before {
		t.Errorf("heartbeat %d after, %d before: the guest restarted", after, before)
	}

	// The address went back to host-local with the pod's interface.
	w.waitNoLeases(ctx, t, "hot-net", "192.168.178.")

	w.deleteVM(ctx, t, vm)
	must(t, w.c.Delete(ctx, nad))
}

// editVM changes vm by change, read again on a conflict with the
// controllers' writes.
func (w *world) editVM(ctx context.Context, t *testing.T, vm *virtv1.VirtualMachine, change func(*virtv1.VirtualMachine)) {
	t.Helper()
	for {
		must(t, w.c.Get(ctx, client.ObjectKeyFromObject(vm), vm))
		change(vm)
		err := w.c.Update(ctx, vm)
		if !apierrors.IsConflict(err) {
			must(t, err)
			return
		}
	}
}

// launcherNetworks is the Multus annotation of v's launcher pod.
func (w *world) launcherNetworks(ctx context.Context, t *testing.T, v *virtv1.VirtualMachineInstance) string {
	t.Helper()
	var pods corev1.PodList
	must(t, w.c.List(ctx, &pods, client.InNamespace(v.Namespace), client.MatchingLabels{virtv1.CreatedByLabel: string(v.UID)}))
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			return p.Annotations[network.MultusNetworksAnnotation]
		}
	}
	t.Fatalf("VMI %s has no running launcher pod", v.Name)
	return ""
}

// noRestartRequired fails t when vm says it needs a restart.
func (w *world) noRestartRequired(ctx context.Context, t *testing.T, vm *virtv1.VirtualMachine) {
	t.Helper()
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(vm), vm))
	if c := conditions.VM().Find(vm.Status.Conditions, virtv1.VirtualMachineRestartRequired); c != nil {
		t.Errorf("the VM asks for a restart: %+v", c)
	}
}
