package domain

import (
	"errors"
	"testing"

	"gotest.tools/v3/assert"
	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

// baseVMI is a small valid VMI: a container disk, a cloud-init disk and a
// masquerade NIC.
func baseVMI() *virtv1.VirtualMachineInstance {
	return &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns", UID: "0000-uid"},
		Spec: virtv1.VirtualMachineInstanceSpec{
			Domain: virtv1.DomainSpec{
				Resources: virtv1.ResourceRequirements{Requests: k8sv1.ResourceList{k8sv1.ResourceMemory: resource.MustParse("1Gi")}},
				Firmware:  &virtv1.Firmware{UUID: "5d307ca9-b3ef-428c-8861-06e72d69f223"},
				Devices: virtv1.Devices{
					Disks: []virtv1.Disk{
						{Name: "rootdisk", DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusVirtio}}},
						{Name: "cloudinit", DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusVirtio}}},
					},
					Interfaces: []virtv1.Interface{{Name: "default", InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Masquerade: &virtv1.InterfaceMasquerade{}}}},
				},
			},
			Networks: []virtv1.Network{{Name: "default", NetworkSource: virtv1.NetworkSource{Pod: &virtv1.PodNetwork{}}}},
			Volumes: []virtv1.Volume{
				{Name: "rootdisk", VolumeSource: virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "quay.io/containerdisks/fedora:41"}}},
				{Name: "cloudinit", VolumeSource: virtv1.VolumeSource{CloudInitNoCloud: &virtv1.CloudInitNoCloudSource{UserData: "#cloud-config\n"}}},
			},
		},
	}
}

func TestConvertErrors(t *testing.T) {
	ptr := func(b bool) *bool { return &b }
	cases := []struct {
		name  string
		edit  func(*virtv1.VirtualMachineInstance, *Host)
		field string
		kind  error
	}{
		{"missing storage plan", func(_ *virtv1.VirtualMachineInstance, h *Host) { delete(h.Storage, "cloudinit") },
			"spec.domain.devices.disks[1]", ErrMissingPlan},
		{"missing network plan", func(_ *virtv1.VirtualMachineInstance, h *Host) { delete(h.Network, "default") },
			"spec.domain.devices.interfaces[0]", ErrMissingPlan},
		{"disk without volume", func(v *virtv1.VirtualMachineInstance, _ *Host) { v.Spec.Volumes = v.Spec.Volumes[:1] },
			"spec.domain.devices.disks[1].name", ErrInvalidField},
		{"unknown bus", func(v *virtv1.VirtualMachineInstance, _ *Host) { v.Spec.Domain.Devices.Disks[1].Disk.Bus = "ide" },
			"spec.domain.devices.disks[1]", ErrInvalidField},
		{"cdrom on virtio", func(v *virtv1.VirtualMachineInstance, _ *Host) {
			v.Spec.Domain.Devices.Disks[1].DiskDevice = virtv1.DiskDevice{CDRom: &virtv1.CDRomTarget{Bus: virtv1.DiskBusVirtio}}
		}, "spec.domain.devices.disks[1].cdrom.bus", ErrInvalidField},
		{"lun on a file", func(v *virtv1.VirtualMachineInstance, _ *Host) {
			v.Spec.Domain.Devices.Disks[0].DiskDevice = virtv1.DiskDevice{LUN: &virtv1.LunTarget{}}
		}, "spec.domain.devices.disks[0].lun", ErrInvalidField},
		{"bad cache", func(v *virtv1.VirtualMachineInstance, _ *Host) { v.Spec.Domain.Devices.Disks[0].Cache = "unsafe" },
			"spec.domain.devices.disks[0].cache", ErrInvalidField},
		{"shareable with writeback", func(v *virtv1.VirtualMachineInstance, _ *Host) {
			v.Spec.Domain.Devices.Disks[0].Cache, v.Spec.Domain.Devices.Disks[0].Shareable = virtv1.CacheWriteBack, ptr(true)
		}, "spec.domain.devices.disks[0].cache", ErrInvalidField},
		{"matchVolume without plan sizes", func(v *virtv1.VirtualMachineInstance, _ *Host) {
			v.Spec.Domain.Devices.Disks[0].BlockSize = &virtv1.BlockSize{MatchVolume: &virtv1.FeatureState{}}
		}, "spec.domain.devices.disks[0].blockSize.matchVolume", ErrMissingPlan},
		{"bad disk pci address", func(v *virtv1.VirtualMachineInstance, _ *Host) {
			v.Spec.Domain.Devices.Disks[0].Disk.PciAddress = "0:1:2"
		},
			"spec.domain.devices.disks[0].disk.pciAddress", ErrInvalidField},
		{"unknown nic model", func(v *virtv1.VirtualMachineInstance, _ *Host) { v.Spec.Domain.Devices.Interfaces[0].Model = "vmxnet3" },
			"spec.domain.devices.interfaces[0].model", ErrInvalidField},
		{"sriov binding", func(v *virtv1.VirtualMachineInstance, _ *Host) {
			v.Spec.Domain.Devices.Interfaces[0].InterfaceBindingMethod = virtv1.InterfaceBindingMethod{SRIOV: &virtv1.InterfaceSRIOV{}}
		}, "spec.domain.devices.interfaces[0].sriov", ErrNotImplemented},
		{"no memory", func(v *virtv1.VirtualMachineInstance, _ *Host) {
			v.Spec.Domain.Resources = virtv1.ResourceRequirements{}
		},
			"spec.domain.memory.guest", ErrInvalidField},
		{"unavailable hugepages", func(v *virtv1.VirtualMachineInstance, h *Host) {
			v.Spec.Domain.Memory = &virtv1.Memory{Hugepages: &virtv1.Hugepages{PageSize: "1Gi"}}
			h.HugepageSizes = []string{"2Mi"}
		}, "spec.domain.memory.hugepages.pageSize", ErrMissingHostFact},
		{"maxGuest below guest", func(v *virtv1.VirtualMachineInstance, _ *Host) {
			q := resource.MustParse("512Mi")
			v.Spec.Domain.Memory = &virtv1.Memory{MaxGuest: &q}
		}, "spec.domain.memory.maxGuest", ErrInvalidField},
		{"too few dedicated cpus", func(v *virtv1.VirtualMachineInstance, h *Host) {
			v.Spec.Domain.CPU = &virtv1.CPU{Cores: 4, DedicatedCPUPlacement: true}
			h.CPU.DedicatedCPUs = []int{1, 2}
		}, "spec.domain.cpu.dedicatedCpuPlacement", ErrMissingHostFact},
		{"numa passthrough without hugepages", func(v *virtv1.VirtualMachineInstance, h *Host) {
			v.Spec.Domain.CPU = &virtv1.CPU{Cores: 2, DedicatedCPUPlacement: true, NUMA: &virtv1.NUMA{GuestMappingPassthrough: &virtv1.NUMAGuestMappingPassthrough{}}}
			h.CPU.DedicatedCPUs = []int{1, 2}
		}, "spec.domain.cpu.numa.guestMappingPassthrough", ErrInvalidField},
		{"bad cpu feature policy", func(v *virtv1.VirtualMachineInstance, _ *Host) {
			v.Spec.Domain.CPU = &virtv1.CPU{Features: []virtv1.CPUFeature{{Name: "vmx"}, {Name: "pcid", Policy: "want"}}}
		}, "spec.domain.cpu.features[1].policy", ErrInvalidField},
		{"missing host device", func(v *virtv1.VirtualMachineInstance, _ *Host) {
			v.Spec.Domain.Devices.HostDevices = []virtv1.HostDevice{{Name: "nic1", DeviceName: "intel.com/e810"}}
		}, "spec.domain.devices.hostDevices[0]", ErrMissingHostFact},
		{"vsock without cid", func(v *virtv1.VirtualMachineInstance, _ *Host) { v.Spec.Domain.Devices.AutoattachVSOCK = ptr(true) },
			"spec.domain.devices.autoattachVSOCK", ErrMissingHostFact},
		{"architecture mismatch", func(v *virtv1.VirtualMachineInstance, _ *Host) { v.Spec.Architecture = "arm64" },
			"spec.architecture", ErrMissingHostFact},
		{"kernel args without kernel", func(v *virtv1.VirtualMachineInstance, _ *Host) {
			v.Spec.Domain.Firmware.KernelBoot = &virtv1.KernelBoot{KernelArgs: "console=ttyS0"}
		}, "spec.domain.firmware.kernelBoot.kernelArgs", ErrInvalidField},
		{"tlbflush direct", func(v *virtv1.VirtualMachineInstance, _ *Host) {
			v.Spec.Domain.Features = &virtv1.Features{Hyperv: &virtv1.FeatureHyperv{TLBFlush: &virtv1.TLBFlush{Direct: &virtv1.FeatureState{}}}}
		}, "spec.domain.features.hyperv.tlbflush", ErrNotImplemented},
		{"launch security", func(v *virtv1.VirtualMachineInstance, _ *Host) {
			v.Spec.Domain.LaunchSecurity = &virtv1.LaunchSecurity{SEV: &virtv1.SEV{}}
		}, "spec.domain.launchSecurity", ErrNotImplemented},
		{"supplemental pool without count", func(v *virtv1.VirtualMachineInstance, _ *Host) {
			p := virtv1.IOThreadsPolicySupplementalPool
			v.Spec.Domain.IOThreadsPolicy = &p
		}, "spec.domain.ioThreads.supplementalPoolThreadCount", ErrInvalidField},
		{"watchdog without model", func(v *virtv1.VirtualMachineInstance, _ *Host) {
			v.Spec.Domain.Devices.Watchdog = &virtv1.Watchdog{Name: "w"}
		}, "spec.domain.devices.watchdog", ErrInvalidField},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vmi := baseVMI()
			host := testHost(vmi)
			tc.edit(vmi, &host)
			dom, err := Convert(vmi, host)
			assert.Assert(t, dom == nil)
			var ce *ConvertError
			assert.Assert(t, errors.As(err, &ce), "want a *ConvertError, got %v", err)
			assert.Equal(t, ce.Field, tc.field, err.Error())
			assert.Assert(t, errors.Is(err, tc.kind), "want %v, got %v", tc.kind, err)
		})
	}
}

func TestConvertNilAndEmpty(t *testing.T) {
	_, err := Convert(nil, Host{})
	assert.ErrorIs(t, err, ErrInvalidField)
	// An empty VMI (nothing defaulted) fails on memory, not with a panic.
	_, err = Convert(&virtv1.VirtualMachineInstance{}, Host{})
	assert.ErrorContains(t, err, "spec.domain.memory.guest")
}

func TestConvertDoesNotModifyInput(t *testing.T) {
	vmi := baseVMI()
	before := vmi.DeepCopy()
	host := testHost(vmi)
	_, err := Convert(vmi, host)
	assert.NilError(t, err)
	assert.DeepEqual(t, vmi, before)
}

func TestConvertOptions(t *testing.T) {
	vmi := baseVMI()
	host := testHost(vmi)
	dom, err := Convert(vmi, host,
		WithUUID("11111111-2222-3333-4444-555555555555"),
		WithPCIAddresses(map[string]string{"ua-rootdisk": "0000:07:00.0", "ua-default": "0000:01:00.0"}),
		WithSMBIOS(SMBIOS{Manufacturer: "virtkit"}),
		WithMemBalloonStatsPeriod(0),
	)
	assert.NilError(t, err)
	assert.Equal(t, dom.UUID, "11111111-2222-3333-4444-555555555555")
	assert.Equal(t, *dom.Devices.Disks[0].Address.PCI.Bus, uint(7))
	assert.Equal(t, *dom.Devices.Interfaces[0].Address.PCI.Bus, uint(1))
	assert.Assert(t, dom.Devices.Disks[1].Address == nil)
	assert.Assert(t, dom.Devices.MemBalloon.Stats == nil)
	entries := dom.SysInfo[0].SMBIOS.System.Entry
	assert.Equal(t, entries[0].Name, "manufacturer")
	assert.Equal(t, entries[0].Value, "virtkit")
}

func TestHotpluggableVolumeLeftOut(t *testing.T) {
	vmi := baseVMI()
	vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "hot", DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusSCSI}}})
	vmi.Spec.Volumes = append(vmi.Spec.Volumes, virtv1.Volume{Name: "hot", VolumeSource: virtv1.VolumeSource{
		PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{Hotpluggable: true}}})
	host := testHost(vmi)
	delete(host.Storage, "hot") // not planned yet: it is attached after boot
	dom, err := Convert(vmi, host)
	assert.NilError(t, err)
	assert.Equal(t, len(dom.Devices.Disks), 2)
}
