package spec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	virtv1 "kubevirt.io/api/core/v1"
)

// quantityCmp compares quantities by value, as the API server does.
var quantityCmp = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func TestDefaultVMITypical(t *testing.T) {
	vmi := userVMI()
	DefaultVMI(vmi)
	grace := int64(30)
	want := virtv1.VirtualMachineInstanceSpec{
		Architecture:                  "amd64",
		TerminationGracePeriodSeconds: &grace,
		Domain: virtv1.DomainSpec{
			Resources: virtv1.ResourceRequirements{Requests: k8sv1.ResourceList{k8sv1.ResourceMemory: *qty("1Gi")}},
			CPU:       &virtv1.CPU{Sockets: 1, Cores: 1, Threads: 1, Model: "host-model"},
			Memory:    &virtv1.Memory{Guest: qty("1Gi")},
			Machine:   &virtv1.Machine{Type: "q35"},
			Firmware:  &virtv1.Firmware{UUID: FirmwareUUID("default", "testvmi")},
			Features:  &virtv1.Features{ACPI: virtv1.FeatureState{Enabled: boolPtr(true)}},
			Devices: virtv1.Devices{
				Disks: []virtv1.Disk{
					{Name: "rootdisk", DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: "virtio"}}},
					{Name: "cloudinit", DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: "virtio"}}},
				},
				Interfaces: []virtv1.Interface{{Name: "default", Model: "virtio",
					InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Masquerade: &virtv1.InterfaceMasquerade{}}}},
			},
		},
		Networks: []virtv1.Network{{Name: "default", NetworkSource: virtv1.NetworkSource{Pod: &virtv1.PodNetwork{}}}},
		Volumes: []virtv1.Volume{
			{Name: "rootdisk", VolumeSource: virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{
				Image: "quay.io/containerdisks/fedora:40", ImagePullPolicy: k8sv1.PullIfNotPresent}}},
			{Name: "cloudinit", VolumeSource: virtv1.VolumeSource{CloudInitNoCloud: &virtv1.CloudInitNoCloudSource{UserData: "#cloud-config\n"}}},
		},
	}
	if diff := cmp.Diff(want, vmi.Spec, quantityCmp); diff != "" {
		t.Errorf("DefaultVMI (-want +got):\n%s", diff)
	}
}

type defaultRow struct {
	name string
	in   func(*virtv1.VirtualMachineInstance)
	opts []Option
	pick func(*virtv1.VirtualMachineInstance) any
	want any
}

func defaultRows() []defaultRow {
	spec := func(v *virtv1.VirtualMachineInstance) *virtv1.VirtualMachineInstanceSpec { return &v.Spec }
	cpuOf := func(v *virtv1.VirtualMachineInstance) any { return *v.Spec.Domain.CPU }
	requests := func(v *virtv1.VirtualMachineInstance) any {
		return []any{v.Spec.Domain.Resources.Requests.Cpu().String(), v.Spec.Domain.Resources.Requests.Memory().String(), v.Spec.Domain.Memory.Guest.String()}
	}
	return []defaultRow{
		{"no pod interface when autoattach is false", func(v *virtv1.VirtualMachineInstance) {
			spec(v).Domain.Devices.AutoattachPodInterface = boolPtr(false)
		}, nil, func(v *virtv1.VirtualMachineInstance) any {
			return []int{len(v.Spec.Networks), len(v.Spec.Domain.Devices.Interfaces)}
		}, []int{0, 0}},
		{"no pod interface when interfaces are given", func(v *virtv1.VirtualMachineInstance) {
			spec(v).Domain.Devices.Interfaces = []virtv1.Interface{{Name: "x", InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Bridge: &virtv1.InterfaceBridge{}}}}
		}, nil, func(v *virtv1.VirtualMachineInstance) any {
			return []int{len(v.Spec.Networks), len(v.Spec.Domain.Devices.Interfaces)}
		}, []int{0, 1}},
		{"cdrom: sata, read-only, tray closed", func(v *virtv1.VirtualMachineInstance) {
			spec(v).Domain.Devices.Disks[0].DiskDevice = virtv1.DiskDevice{CDRom: &virtv1.CDRomTarget{}}
		}, nil, func(v *virtv1.VirtualMachineInstance) any { return *v.Spec.Domain.Devices.Disks[0].CDRom },
			virtv1.CDRomTarget{Bus: "sata", ReadOnly: boolPtr(true), Tray: "closed"}},
		{"lun: scsi", func(v *virtv1.VirtualMachineInstance) {
			spec(v).Domain.Devices.Disks[0].DiskDevice = virtv1.DiskDevice{LUN: &virtv1.LunTarget{}}
		}, nil, func(v *virtv1.VirtualMachineInstance) any { return *v.Spec.Domain.Devices.Disks[0].LUN }, virtv1.LunTarget{Bus: "scsi"}},
		{"bus given is kept", func(v *virtv1.VirtualMachineInstance) { spec(v).Domain.Devices.Disks[0].Disk.Bus = "scsi" },
			nil, func(v *virtv1.VirtualMachineInstance) any { return v.Spec.Domain.Devices.Disks[0].Disk.Bus }, virtv1.DiskBus("scsi")},
		{"bare volume gets a disk, memory dump and filesystem volumes do not", func(v *virtv1.VirtualMachineInstance) {
			spec(v).Domain.Devices.Disks = nil
			spec(v).Volumes = append(spec(v).Volumes,
				virtv1.Volume{Name: "dump", VolumeSource: virtv1.VolumeSource{MemoryDump: &virtv1.MemoryDumpVolumeSource{}}},
				virtv1.Volume{Name: "share", VolumeSource: virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: "s"}}})
			spec(v).Domain.Devices.Filesystems = []virtv1.Filesystem{{Name: "share", Virtiofs: &virtv1.FilesystemVirtiofs{}}}
		}, nil, func(v *virtv1.VirtualMachineInstance) any {
			var names []string
			for _, d := range v.Spec.Domain.Devices.Disks {
				names = append(names, d.Name+":"+string(d.Disk.Bus))
			}
			return names
		}, []string{"rootdisk:virtio", "cloudinit:virtio"}},
		{"sockets from CPU limit, request from limit", func(v *virtv1.VirtualMachineInstance) {
			spec(v).Domain.Resources.Limits = k8sv1.ResourceList{k8sv1.ResourceCPU: *qty("3")}
		}, nil, func(v *virtv1.VirtualMachineInstance) any {
			return []any{*v.Spec.Domain.CPU, v.Spec.Domain.Resources.Requests.Cpu().String()}
		}, []any{virtv1.CPU{Sockets: 3, Cores: 1, Threads: 1, Model: "host-model"}, "3"}},
		{"sockets from fractional request round up", func(v *virtv1.VirtualMachineInstance) {
			spec(v).Domain.Resources.Requests = k8sv1.ResourceList{k8sv1.ResourceCPU: *qty("1500m")}
		}, nil, cpuOf, virtv1.CPU{Sockets: 2, Cores: 1, Threads: 1, Model: "host-model"}},
		{"partial topology kept", func(v *virtv1.VirtualMachineInstance) { spec(v).Domain.CPU = &virtv1.CPU{Cores: 2} },
			nil, cpuOf, virtv1.CPU{Cores: 2, Model: "host-model"}},
		{"memory limit becomes request and guest", func(v *virtv1.VirtualMachineInstance) {
			spec(v).Domain.Memory = nil
			spec(v).Domain.Resources.Limits = k8sv1.ResourceList{k8sv1.ResourceMemory: *qty("2Gi")}
		}, nil, requests, []any{"0", "2Gi", "2Gi"}},
		{"memory overcommit", func(v *virtv1.VirtualMachineInstance) { spec(v).Domain.Memory.Guest = qty("3Gi") },
			[]Option{WithMemoryOvercommit(150)}, requests, []any{"0", "2Gi", "3Gi"}},
		{"hugepage size as last resort", func(v *virtv1.VirtualMachineInstance) {
			spec(v).Domain.Memory = &virtv1.Memory{Hugepages: &virtv1.Hugepages{PageSize: "2Mi"}}
		}, nil, requests, []any{"0", "2Mi", "2Mi"}},
		{"arm64", func(v *virtv1.VirtualMachineInstance) {
			spec(v).Domain.Devices.Disks[0].DiskDevice = virtv1.DiskDevice{CDRom: &virtv1.CDRomTarget{}}
		}, []Option{WithArchitecture("arm64")}, func(v *virtv1.VirtualMachineInstance) any {
			return []any{v.Spec.Architecture, v.Spec.Domain.Machine.Type, v.Spec.Domain.CPU.Model,
				*v.Spec.Domain.Firmware.Bootloader.EFI.SecureBoot, v.Spec.Domain.Devices.Disks[0].CDRom.Bus}
		}, []any{"arm64", "virt", "host-passthrough", false, virtv1.DiskBus("scsi")}},
		{"options", func(v *virtv1.VirtualMachineInstance) {},
			[]Option{WithDefaultMachineType("pc-q35-9.0"), WithCPUModel("Skylake-Server"), WithTerminationGracePeriod(180)},
			func(v *virtv1.VirtualMachineInstance) any {
				return []any{v.Spec.Domain.Machine.Type, v.Spec.Domain.CPU.Model, *v.Spec.TerminationGracePeriodSeconds}
			}, []any{"pc-q35-9.0", "Skylake-Server", int64(180)}},
		{"given values kept", func(v *virtv1.VirtualMachineInstance) {
			g := int64(5)
			spec(v).TerminationGracePeriodSeconds = &g
			spec(v).Domain.Machine = &virtv1.Machine{Type: "pc-q35-8.0"}
			spec(v).Domain.CPU = &virtv1.CPU{Model: "host-passthrough", Sockets: 2}
			spec(v).Domain.Firmware = &virtv1.Firmware{UUID: "0d2a2043-41c0-59c3-9b17-025022203668"}
			spec(v).Domain.Features = &virtv1.Features{ACPI: virtv1.FeatureState{Enabled: boolPtr(false)}}
		}, nil, func(v *virtv1.VirtualMachineInstance) any {
			return []any{*v.Spec.TerminationGracePeriodSeconds, v.Spec.Domain.Machine.Type, *v.Spec.Domain.CPU,
				string(v.Spec.Domain.Firmware.UUID), *v.Spec.Domain.Features.ACPI.Enabled}
		}, []any{int64(5), "pc-q35-8.0", virtv1.CPU{Model: "host-passthrough", Sockets: 2}, "0d2a2043-41c0-59c3-9b17-025022203668", false}},
		{"hyperv dependencies turned on", func(v *virtv1.VirtualMachineInstance) {
			spec(v).Domain.Features = &virtv1.Features{Hyperv: &virtv1.FeatureHyperv{SyNICTimer: &virtv1.SyNICTimer{}}}
		}, nil, func(v *virtv1.VirtualMachineInstance) any {
			h := v.Spec.Domain.Features.Hyperv
			return []bool{featureOn(&h.SyNICTimer.FeatureState), featureOn(h.SyNIC), featureOn(h.VPIndex)}
		}, []bool{true, true, true}},
		{"container disk pull policies", func(v *virtv1.VirtualMachineInstance) {
			spec(v).Volumes = nil
			for i, img := range []string{"a:latest", "a:1.0", "a@sha256:00", "a"} {
				spec(v).Volumes = append(spec(v).Volumes, virtv1.Volume{Name: string(rune('a' + i)),
					VolumeSource: virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: img}}})
			}
		}, nil, func(v *virtv1.VirtualMachineInstance) any {
			var out []k8sv1.PullPolicy
			for _, vol := range v.Spec.Volumes {
				out = append(out, vol.ContainerDisk.ImagePullPolicy)
			}
			return out
		}, []k8sv1.PullPolicy{"Always", "IfNotPresent", "IfNotPresent", "Always"}},
		{"no firmware UUID without a name", func(v *virtv1.VirtualMachineInstance) { v.Name, v.GenerateName = "", "vm-" },
			nil, func(v *virtv1.VirtualMachineInstance) any { return string(v.Spec.Domain.Firmware.UUID) }, ""},
		{"autoattach input device", func(v *virtv1.VirtualMachineInstance) { spec(v).Domain.Devices.AutoattachInputDevice = boolPtr(true) },
			nil, func(v *virtv1.VirtualMachineInstance) any { return v.Spec.Domain.Devices.Inputs },
			[]virtv1.Input{{Name: "default-0", Type: "tablet", Bus: "usb"}}},
	}
}

func TestDefaultVMI(t *testing.T) {
	for _, r := range defaultRows() {
		t.Run(r.name, func(t *testing.T) {
			vmi := userVMI()
			r.in(vmi)
			DefaultVMI(vmi, r.opts...)
			if diff := cmp.Diff(r.want, r.pick(vmi), quantityCmp); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestDefaultVMIIdempotent: defaulting a defaulted VMI changes nothing.
func TestDefaultVMIIdempotent(t *testing.T) {
	rows := append(defaultRows(), defaultRow{name: "typical", in: func(*virtv1.VirtualMachineInstance) {}})
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			vmi := userVMI()
			r.in(vmi)
			DefaultVMI(vmi, r.opts...)
			once := vmi.DeepCopy()
			DefaultVMI(vmi, r.opts...)
			if diff := cmp.Diff(once, vmi, quantityCmp); diff != "" {
				t.Errorf("second DefaultVMI changed the VMI (-once +twice):\n%s", diff)
			}
		})
	}
}

func TestDefaultVMINil(t *testing.T) {
	DefaultVMI(nil)
	DefaultVM(nil)
	if NewVMIFromVM(nil) != nil || NewVMIFromVM(&virtv1.VirtualMachine{}) != nil {
		t.Error("NewVMIFromVM without a template must return nil")
	}
}

func TestFirmwareUUID(t *testing.T) {
	// Reference value from Python's uuid.uuid5(UUID("6a1a24a1-4061-4607-8bf4-a3963d0c5895"), "default/demo").
	if got := FirmwareUUID("default", "demo"); got != "c8f23ed9-4fb7-5c77-84f2-a85f426b3f44" {
		t.Errorf("FirmwareUUID = %s", got)
	}
	if FirmwareUUID("a", "vm") == FirmwareUUID("b", "vm") {
		t.Error("namespaces must give different UUIDs")
	}
	if !isUUID(string(FirmwareUUID("x", "y"))) {
		t.Error("not a UUID")
	}
}

func TestDefaultVMAndNewVMIFromVM(t *testing.T) {
	vmi := userVMI()
	vm := &virtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "vm1", Namespace: "ns", UID: "uid-1"},
		Spec: virtv1.VirtualMachineSpec{
			Instancetype: &virtv1.InstancetypeMatcher{Name: "u1.small"},
			Preference:   &virtv1.PreferenceMatcher{Name: "fedora", Kind: "VirtualMachinePreference"},
			Template: &virtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Name: "ignored", Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"a": "b"}},
				Spec:       vmi.Spec,
			},
		},
	}
	vm.Spec.Template.Spec.Domain.Memory = nil
	vm.Spec.Template.Spec.Domain.Devices.Disks = vm.Spec.Template.Spec.Domain.Devices.Disks[:1]

	DefaultVM(vm)
	if diff := cmp.Diff([]string{"virtualmachineclusterinstancetype", "VirtualMachinePreference", "amd64"},
		[]string{vm.Spec.Instancetype.Kind, vm.Spec.Preference.Kind, vm.Spec.Template.Spec.Architecture}); diff != "" {
		t.Errorf("DefaultVM (-want +got):\n%s", diff)
	}
	if vm.Spec.Template.Spec.Domain.Machine != nil {
		t.Error("machine type must wait for the preference when it is not supplied")
	}
	if vm.Spec.Template.Spec.Domain.CPU != nil || vm.Spec.Template.Spec.Domain.Memory != nil {
		t.Error("DefaultVM must not default what the instancetype provides")
	}
	before := vm.DeepCopy()

	got := NewVMIFromVM(vm)
	if diff := cmp.Diff(before, vm); diff != "" {
		t.Errorf("NewVMIFromVM changed the VM:\n%s", diff)
	}
	wantMeta := metav1.ObjectMeta{
		Name: "vm1", Namespace: "ns", Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"a": "b"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "vm1", UID: "uid-1",
			Controller: boolPtr(true), BlockOwnerDeletion: boolPtr(true)}},
	}
	if diff := cmp.Diff(wantMeta, got.ObjectMeta); diff != "" {
		t.Errorf("VMI metadata (-want +got):\n%s", diff)
	}
	if got.Spec.Domain.Firmware.UUID != FirmwareUUID("ns", "vm1") {
		t.Errorf("firmware UUID %s", got.Spec.Domain.Firmware.UUID)
	}
	if len(got.Spec.Domain.Devices.Disks) != 2 || got.Spec.Domain.Devices.Disks[1].Name != "cloudinit" {
		t.Errorf("bare volume did not get a disk: %+v", got.Spec.Domain.Devices.Disks)
	}
	if got.Kind != "VirtualMachineInstance" || got.APIVersion != "kubevirt.io/v1" {
		t.Errorf("type meta %+v", got.TypeMeta)
	}
}

func TestDefaultVMMachineType(t *testing.T) {
	mk := func(pref bool) *virtv1.VirtualMachine {
		vm := &virtv1.VirtualMachine{Spec: virtv1.VirtualMachineSpec{Template: &virtv1.VirtualMachineInstanceTemplateSpec{}}}
		if pref {
			vm.Spec.Preference = &virtv1.PreferenceMatcher{Name: "p"}
		}
		return vm
	}
	vm := mk(false)
	DefaultVM(vm)
	if vm.Spec.Template.Spec.Domain.Machine.Type != "q35" {
		t.Errorf("got %v", vm.Spec.Template.Spec.Domain.Machine)
	}
	vm = mk(true)
	DefaultVM(vm, WithPreference(prefWithMachine("pc-q35-7.0")))
	if vm.Spec.Template.Spec.Domain.Machine.Type != "pc-q35-7.0" {
		t.Errorf("got %v", vm.Spec.Template.Spec.Domain.Machine)
	}
}
