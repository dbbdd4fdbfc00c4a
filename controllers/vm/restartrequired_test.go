package vm

import (
	"testing"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/conditions"
)

// A running VM whose template changed in a way its VMI cannot take live
// says RestartRequired, with KubeVirt's message; what is applied live
// (declared hotplug, interface hotplug and unplug, claims under volume
// migration, a firmware UUID written after the start, what PlanLiveUpdate
// judges) does not; the condition goes when the template
// is back or the VMI is gone.
func TestRestartRequired(t *testing.T) {
	base := func() *virtv1.VirtualMachine {
		return newVM(func(vm *virtv1.VirtualMachine) {
			s := &vm.Spec.Template.Spec
			s.Domain.Memory = &virtv1.Memory{Guest: resource.NewQuantity(128<<20, resource.BinarySI)}
			s.Domain.Devices.Disks = []virtv1.Disk{{Name: "root"}}
			s.Volumes = []virtv1.Volume{{Name: "root", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
				PersistentVolumeClaimVolumeSource: k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: "root-a"}}}}}
			s.Networks = []virtv1.Network{{Name: "default", NetworkSource: virtv1.NetworkSource{Pod: &virtv1.PodNetwork{}}},
				{Name: "blue", NetworkSource: virtv1.NetworkSource{Multus: &virtv1.MultusNetwork{NetworkName: "blue-net"}}}}
			s.Domain.Devices.Interfaces = []virtv1.Interface{{Name: "default", InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Masquerade: &virtv1.InterfaceMasquerade{}}},
				{Name: "blue", InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Bridge: &virtv1.InterfaceBridge{}}}}
		})
	}
	started := base()
	vmiFrom := func(vm *virtv1.VirtualMachine, phase virtv1.VirtualMachineInstancePhase) *virtv1.VirtualMachineInstance {
		return newVMI(phase, func(vmi *virtv1.VirtualMachineInstance) {
			vmi.Annotations = map[string]string{AnnTemplateHash: TemplateHash(vm), AnnNetworkHash: NetworkHash(vm)}
			vmi.Spec = *vm.Spec.Template.Spec.DeepCopy()
		})
	}
	migration := virtv1.UpdateVolumesStrategyMigration
	for _, tc := range []struct {
		name   string
		change func(*virtv1.VirtualMachine)
		phase  virtv1.VirtualMachineInstancePhase
		want   bool
	}{
		{"unchanged", func(*virtv1.VirtualMachine) {}, virtv1.Running, false},
		{"another CPU model", func(vm *virtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.CPU = &virtv1.CPU{Model: "Haswell"}
		}, virtv1.Running, true},
		{"another CPU model, VMI ended", func(vm *virtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.CPU = &virtv1.CPU{Model: "Haswell"}
		}, virtv1.Succeeded, false},
		{"more memory (PlanLiveUpdate's to judge)", func(vm *virtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Memory.Guest = resource.NewQuantity(256<<20, resource.BinarySI)
		}, virtv1.Running, false},
		{"a declared hotplug volume", func(vm *virtv1.VirtualMachine) {
			s := &vm.Spec.Template.Spec
			s.Domain.Devices.Disks = append(s.Domain.Devices.Disks, virtv1.Disk{Name: "hot"})
			s.Volumes = append(s.Volumes, virtv1.Volume{Name: "hot", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
				Hotpluggable: true, PersistentVolumeClaimVolumeSource: k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}})
		}, virtv1.Running, false},
		{"a firmware UUID written after the start", func(vm *virtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Firmware = &virtv1.Firmware{UUID: "5d307ca9-b3ef-428c-8861-06e72d69f223"}
		}, virtv1.Running, false},
		{"a bridge interface on a secondary network (hotplug)", func(vm *virtv1.VirtualMachine) {
			s := &vm.Spec.Template.Spec
			s.Networks = append(s.Networks, virtv1.Network{Name: "red", NetworkSource: virtv1.NetworkSource{Multus: &virtv1.MultusNetwork{NetworkName: "red-net"}}})
			s.Domain.Devices.Interfaces = append(s.Domain.Devices.Interfaces, virtv1.Interface{Name: "red",
				InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Bridge: &virtv1.InterfaceBridge{}}})
		}, virtv1.Running, false},
		{"an interface set absent (unplug)", func(vm *virtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Devices.Interfaces[1].State = virtv1.InterfaceStateAbsent
		}, virtv1.Running, false},
		{"an interface dropped outright", func(vm *virtv1.VirtualMachine) {
			s := &vm.Spec.Template.Spec
			s.Domain.Devices.Interfaces, s.Networks = s.Domain.Devices.Interfaces[:1], s.Networks[:1]
		}, virtv1.Running, true},
		{"another interface model", func(vm *virtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Devices.Interfaces[1].Model = "e1000e"
		}, virtv1.Running, true},
		{"another claim, replacing", func(vm *virtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = "root-b"
		}, virtv1.Running, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vm := base()
			tc.change(vm)
			st := NextStatus(vm, vmiFrom(started, tc.phase), nil, DataVolumes{}, t0, Backoff{}).Conditions
			c := conditions.VM().Find(st, virtv1.VirtualMachineRestartRequired)
			if got := c != nil && c.Status == k8sv1.ConditionTrue; got != tc.want {
				t.Fatalf("RestartRequired = %+v, want %v", c, tc.want)
			}
			if tc.want && c.Message != MessageRestartRequired {
				t.Errorf("message %q", c.Message)
			}
		})
	}

	// A VMI an older controller started carries the hash of the whole
	// template, interfaces included, and no network hash: judged on that,
	// an unchanged template needs no restart, a changed interface does.
	legacy := func(vm *virtv1.VirtualMachine) *virtv1.VirtualMachineInstance {
		return newVMI(virtv1.Running, func(vmi *virtv1.VirtualMachineInstance) {
			vmi.Annotations = map[string]string{AnnTemplateHash: templateHash(vm, true)}
			vmi.Spec = *vm.Spec.Template.Spec.DeepCopy()
		})
	}
	for _, tc := range []struct {
		name   string
		change func(*virtv1.VirtualMachine)
		want   bool
	}{
		{"started by an older controller, unchanged", func(*virtv1.VirtualMachine) {}, false},
		{"started by an older controller, another interface model", func(vm *virtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Devices.Interfaces[1].Model = "e1000e"
		}, true},
	} {
		vm := base()
		tc.change(vm)
		st := NextStatus(vm, legacy(started), nil, DataVolumes{}, t0, Backoff{}).Conditions
		if c := conditions.VM().Find(st, virtv1.VirtualMachineRestartRequired); (c != nil && c.Status == k8sv1.ConditionTrue) != tc.want {
			t.Errorf("%s: RestartRequired = %+v, want %v", tc.name, c, tc.want)
		}
	}

	// Media inserted into an empty CD-ROM drive is live: the drive counts,
	// its hotpluggable volume does not.
	withDrive := base()
	withDrive.Spec.Template.Spec.Domain.Devices.Disks = append(withDrive.Spec.Template.Spec.Domain.Devices.Disks,
		virtv1.Disk{Name: "cd", DiskDevice: virtv1.DiskDevice{CDRom: &virtv1.CDRomTarget{}}})
	inserted := withDrive.DeepCopy()
	inserted.Spec.Template.Spec.Volumes = append(inserted.Spec.Template.Spec.Volumes, virtv1.Volume{Name: "cd", VolumeSource: virtv1.VolumeSource{
		PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{Hotpluggable: true,
			PersistentVolumeClaimVolumeSource: k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: "iso"}}}})
	if TemplateHash(withDrive) != TemplateHash(inserted) {
		t.Error("inserting media into a CD-ROM drive changes the hash")
	}
	if TemplateHash(withDrive) == TemplateHash(base()) {
		t.Error("adding a CD-ROM drive does not change the hash")
	}

	// Under volume migration a claim change is the volume update's; the
	// hash does not see it.
	vm := base()
	vm.Spec.UpdateVolumesStrategy = &migration
	moved := vm.DeepCopy()
	moved.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = "root-b"
	if TemplateHash(vm) != TemplateHash(moved) {
		t.Error("under Migration, a claim change changes the hash")
	}
	// Back to what it started from: the condition goes.
	vm = base()
	vm.Status.Conditions = []virtv1.VirtualMachineCondition{{Type: virtv1.VirtualMachineRestartRequired, Status: k8sv1.ConditionTrue, Message: MessageRestartRequired}}
	if st := NextStatus(vm, vmiFrom(started, virtv1.Running), nil, DataVolumes{}, t0, Backoff{}); conditions.VM().Find(st.Conditions, virtv1.VirtualMachineRestartRequired) != nil {
		t.Error("RestartRequired stays after the template went back")
	}
}
