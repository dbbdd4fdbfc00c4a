package spec

import (
	"strings"

	k8sv1 "k8s.io/api/core/v1"

	virtv1 "kubevirt.io/api/core/v1"
)

// defaultPodInterface is KubeVirt's autoattachPodInterface: a VMI that names
// no interface and no network gets the pod network, named "default", bound
// with masquerade (KubeVirt's default network interface), unless
// autoattachPodInterface is false.
func defaultPodInterface(spec *virtv1.VirtualMachineInstanceSpec) {
	if a := spec.Domain.Devices.AutoattachPodInterface; a != nil && !*a {
		return
	}
	if len(spec.Networks) != 0 || len(spec.Domain.Devices.Interfaces) != 0 {
		return
	}
	spec.Domain.Devices.Interfaces = []virtv1.Interface{*virtv1.DefaultMasqueradeNetworkInterface()}
	spec.Networks = []virtv1.Network{*virtv1.DefaultPodNetwork()}
}

// defaultVolumeDisks is KubeVirt's SetDefaultVolumeDisk: every volume that no
// disk and no filesystem names gets a disk of the same name, so that a volume
// listed alone is attached rather than ignored. Memory dump volumes are
// exempt: KubeVirt attaches them itself and never as a disk.
func defaultVolumeDisks(spec *virtv1.VirtualMachineInstanceSpec) {
	devices := &spec.Domain.Devices
	for _, v := range spec.Volumes {
		if v.MemoryDump != nil || hasDiskOrFilesystem(devices, v.Name) {
			continue
		}
		devices.Disks = append(devices.Disks, virtv1.Disk{Name: v.Name})
	}
}

func hasDiskOrFilesystem(d *virtv1.Devices, name string) bool {
	for i := range d.Disks {
		if d.Disks[i].Name == name {
			return true
		}
	}
	for i := range d.Filesystems {
		if d.Filesystems[i].Name == name {
			return true
		}
	}
	return false
}

// defaultPullPolicies is KubeVirt's: a container disk image that is untagged
// or tagged latest is pulled Always, any other IfNotPresent, as the kubelet
// would decide for a container image.
func defaultPullPolicies(spec *virtv1.VirtualMachineInstanceSpec) {
	for i := range spec.Volumes {
		cd := spec.Volumes[i].ContainerDisk
		if cd == nil || cd.ImagePullPolicy != "" {
			continue
		}
		if strings.HasSuffix(cd.Image, ":latest") || !strings.ContainsAny(cd.Image, ":@") {
			cd.ImagePullPolicy = k8sv1.PullAlways
		} else {
			cd.ImagePullPolicy = k8sv1.PullIfNotPresent
		}
	}
}

// defaultDeviceModels writes into the spec the buses and models KubeVirt's
// converter picks when they are empty, so the spec states what the guest
// sees: disks on virtio, cdroms on sata (scsi where the machine type has no
// AHCI controller), LUNs on scsi (SCSI passthrough needs a SCSI bus), NICs as
// virtio. SR-IOV NICs have no emulated model and are left alone.
func defaultDeviceModels(c *config, spec *virtv1.VirtualMachineInstanceSpec) {
	cdromBus := virtv1.DiskBusSATA
	if spec.Architecture == ArchARM64 || spec.Architecture == ArchS390X {
		cdromBus = virtv1.DiskBusSCSI
	}
	for i := range spec.Domain.Devices.Disks {
		d := &spec.Domain.Devices.Disks[i]
		switch {
		case d.Disk != nil && d.Disk.Bus == "":
			d.Disk.Bus = virtv1.DiskBusVirtio
		case d.CDRom != nil && d.CDRom.Bus == "":
			d.CDRom.Bus = cdromBus
		case d.LUN != nil && d.LUN.Bus == "":
			d.LUN.Bus = virtv1.DiskBusSCSI
		}
	}
	for i := range spec.Domain.Devices.Interfaces {
		iface := &spec.Domain.Devices.Interfaces[i]
		if iface.Model == "" && iface.SRIOV == nil {
			iface.Model = virtv1.VirtIO
		}
	}
	autoAttachInput(spec)
}

// autoAttachInput mirrors KubeVirt's VM controller: autoattachInputDevice:
// true with no input device adds one tablet, named "default-0".
func autoAttachInput(spec *virtv1.VirtualMachineInstanceSpec) {
	a := spec.Domain.Devices.AutoattachInputDevice
	if a == nil || !*a || len(spec.Domain.Devices.Inputs) > 0 {
		return
	}
	spec.Domain.Devices.Inputs = []virtv1.Input{{
		Name: "default-0",
		Type: virtv1.InputTypeTablet,
		Bus:  virtv1.InputBusUSB,
	}}
}
