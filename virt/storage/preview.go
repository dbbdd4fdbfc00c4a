package storage

import (
	"path/filepath"

	virtv1 "kubevirt.io/api/core/v1"
)

// Folders of a launcher pod, as KubeVirt lays them out.
const (
	EphemeralDisksDir = "/var/run/kubevirt-ephemeral-disks"
	PrivateDir        = "/var/run/kubevirt-private"
)

// PreviewPlan is the plan the planner would make for vmi in a launcher pod
// laid out as KubeVirt's, without looking at any file: formats are what each
// volume type normally holds (a containerDisk or emptyDisk is used through a
// qcow2 overlay, claims hold raw disk.img) and capacities are unknown. It
// lets a program show a VMI's domain without a pod (examples/convert) and
// gives tests a realistic plan; a launcher uses the real planner.
func PreviewPlan(vmi *virtv1.VirtualMachineInstance) Plan {
	plan := Plan{}
	for i := range vmi.Spec.Volumes {
		v := &vmi.Spec.Volumes[i]
		plan[v.Name] = previewDisk(vmi, v)
	}
	return plan
}

func previewDisk(vmi *virtv1.VirtualMachineInstance, v *virtv1.Volume) DiskPlan {
	p := DiskPlan{Volume: v.Name, Source: SourceFile, Format: FormatRaw}
	cloudInit := filepath.Join(EphemeralDisksDir, "cloud-init-data", vmi.Namespace, vmi.Name)
	switch {
	case v.ContainerDisk != nil:
		p.Kind = KindContainerDisk
		p.Path, p.Format = filepath.Join(EphemeralDisksDir, "disk-data", v.Name, "disk.qcow2"), FormatQCOW2
	case v.Ephemeral != nil:
		p.Kind = KindEphemeral
		p.Path, p.Format = filepath.Join(EphemeralDisksDir, "disk-data", v.Name, "disk.qcow2"), FormatQCOW2
	case v.CloudInitNoCloud != nil:
		p.Kind = KindCloudInitNoCloud
		p.Path, p.ReadOnly = filepath.Join(cloudInit, "noCloud.iso"), true
	case v.CloudInitConfigDrive != nil:
		p.Kind = KindCloudInitConfigDrive
		p.Path, p.ReadOnly = filepath.Join(cloudInit, "configdrive.iso"), true
	case v.EmptyDisk != nil:
		p.Kind = KindEmptyDisk
		p.Path, p.Format = filepath.Join(EphemeralDisksDir, "empty-disks", v.Name+".qcow2"), FormatQCOW2
	case v.ConfigMap != nil, v.Secret != nil, v.ServiceAccount != nil, v.DownwardAPI != nil:
		p.Kind = configKind(v)
		p.Path, p.ReadOnly = filepath.Join(PrivateDir, "config-disks", v.Name+".iso"), true
	case v.HostDisk != nil:
		p.Kind = KindHostDisk
		name, _ := HostDiskFile(v.HostDisk.Path)
		p.Path = filepath.Join(PrivateDir, "vmi-disks", v.Name, name)
	default:
		p.Kind = KindPersistentVolumeClaim
		if v.DataVolume != nil {
			p.Kind = KindDataVolume
		}
		p.Path = filepath.Join(PrivateDir, "vmi-disks", v.Name, "disk.img")
	}
	return p
}

func configKind(v *virtv1.Volume) Kind {
	switch {
	case v.ConfigMap != nil:
		return KindConfigMap
	case v.Secret != nil:
		return KindSecret
	case v.ServiceAccount != nil:
		return KindServiceAccount
	}
	return KindDownwardAPI
}
