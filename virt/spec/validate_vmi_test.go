package spec

import (
	"strings"
	"testing"

	k8sv1 "k8s.io/api/core/v1"

	virtv1 "kubevirt.io/api/core/v1"
)

type vmiRow struct {
	name   string
	mutate func(*virtv1.VirtualMachineInstance)
	want   []errKey
}

const (
	dk  = "spec.domain.devices.disks"
	ifc = "spec.domain.devices.interfaces"
	vol = "spec.volumes"
	res = "spec.domain.resources"
	cpu = "spec.domain.cpu"
	mem = "spec.domain.memory"
	fw  = "spec.domain.firmware"
	dev = "spec.domain.devices"
)

func disk0(v *virtv1.VirtualMachineInstance) *virtv1.Disk { return &v.Spec.Domain.Devices.Disks[0] }
func iface0(v *virtv1.VirtualMachineInstance) *virtv1.Interface {
	return &v.Spec.Domain.Devices.Interfaces[0]
}

func setRes(v *virtv1.VirtualMachineInstance, kind string, name k8sv1.ResourceName, q string) {
	r := &v.Spec.Domain.Resources
	l := &r.Requests
	if kind == "limits" {
		l = &r.Limits
	}
	if *l == nil {
		*l = k8sv1.ResourceList{}
	}
	(*l)[name] = *qty(q)
}

func TestValidVMIHasNoErrors(t *testing.T) {
	assertErrs(t, ValidateVMI(validVMI()))
}

// hostDisk reaches the node's files: refused unless the cluster enables
// KubeVirt's HostDisk feature gate, in a VMI and in a VM's template.
func TestHostDiskNeedsItsFeatureGate(t *testing.T) {
	vmi := validVMI()
	vmi.Spec.Volumes[0].VolumeSource = virtv1.VolumeSource{HostDisk: &virtv1.HostDisk{Path: "/var/lib/disks/d.img", Type: virtv1.HostDiskExists}}
	assertErrs(t, ValidateVMI(vmi), forb("spec.volumes[0].hostDisk"))
	assertErrs(t, ValidateVMI(vmi, WithFeatureGates("Snapshot")), forb("spec.volumes[0].hostDisk"))
	assertErrs(t, ValidateVMI(vmi, WithFeatureGates("Snapshot", FeatureGateHostDisk)))
	vm := validVM()
	vm.Spec.Template.Spec.Volumes[0].VolumeSource = vmi.Spec.Volumes[0].VolumeSource
	assertErrs(t, ValidateVM(vm), forb("spec.template.spec.volumes[0].hostDisk"))
	assertErrs(t, ValidateVM(vm, WithFeatureGates(FeatureGateHostDisk)))
}

func TestValidateVMIRules(t *testing.T) {
	rows := [][]vmiRow{metaRows(), computeRows(), diskRows(), volumeRows(), networkRows(), firmwareDeviceRows()}
	for _, group := range rows {
		for _, r := range group {
			t.Run(r.name, func(t *testing.T) {
				vmi := validVMI()
				r.mutate(vmi)
				assertErrs(t, ValidateVMI(vmi), r.want...)
			})
		}
	}
}

func metaRows() []vmiRow {
	return []vmiRow{
		{"name required", func(v *virtv1.VirtualMachineInstance) { v.Name = "" }, []errKey{req("metadata.name")}},
		{"generateName allowed", func(v *virtv1.VirtualMachineInstance) { v.Name, v.GenerateName = "", "vm-" }, nil},
		{"name DNS subdomain", func(v *virtv1.VirtualMachineInstance) { v.Name = "Bad_Name" }, []errKey{inv("metadata.name")}},
		{"labels valid", func(v *virtv1.VirtualMachineInstance) { v.Labels = map[string]string{"a b": "c"} }, []errKey{inv("metadata.labels")}},
		{"disk list bounded", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks = make([]virtv1.Disk, maxListLen+1)
		}, []errKey{tooMany(dk)}},
		{"hostname DNS label", func(v *virtv1.VirtualMachineInstance) { v.Spec.Hostname = "a.b" }, []errKey{inv("spec.hostname")}},
		{"subdomain DNS label", func(v *virtv1.VirtualMachineInstance) { v.Spec.Subdomain = "A_" }, []errKey{inv("spec.subdomain")}},
		{"grace period >= 0", func(v *virtv1.VirtualMachineInstance) { g := int64(-1); v.Spec.TerminationGracePeriodSeconds = &g },
			[]errKey{inv("spec.terminationGracePeriodSeconds")}},
		{"eviction strategy values", func(v *virtv1.VirtualMachineInstance) {
			e := virtv1.EvictionStrategy("Sometimes")
			v.Spec.EvictionStrategy = &e
		},
			[]errKey{nsup("spec.evictionStrategy")}},
		{"start strategy values", func(v *virtv1.VirtualMachineInstance) { s := virtv1.StartStrategy("Later"); v.Spec.StartStrategy = &s },
			[]errKey{nsup("spec.startStrategy")}},
		{"architecture values", func(v *virtv1.VirtualMachineInstance) { v.Spec.Architecture = "mips" }, []errKey{nsup("spec.architecture")}},
		{"machine type emulated", func(v *virtv1.VirtualMachineInstance) { v.Spec.Domain.Machine.Type = "pc-i440fx-8.2" },
			[]errKey{nsup("spec.domain.machine.type")}},
		{"machine type versioned q35", func(v *virtv1.VirtualMachineInstance) { v.Spec.Domain.Machine.Type = "pc-q35-rhel9.4.0" }, nil},
		{"dns policy values", func(v *virtv1.VirtualMachineInstance) { v.Spec.DNSPolicy = "Sometimes" }, []errKey{nsup("spec.dnsPolicy")}},
		{"dns policy None needs nameservers", func(v *virtv1.VirtualMachineInstance) { v.Spec.DNSPolicy = "None" },
			[]errKey{req("spec.dnsConfig.nameservers")}},
		{"probe needs one action", func(v *virtv1.VirtualMachineInstance) { v.Spec.ReadinessProbe = &virtv1.Probe{} },
			[]errKey{inv("spec.readinessProbe")}},
		{"probe one action only", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.LivenessProbe = &virtv1.Probe{Handler: virtv1.Handler{TCPSocket: &k8sv1.TCPSocketAction{}, GuestAgentPing: &virtv1.GuestAgentPing{}}, PeriodSeconds: -1}
		}, []errKey{inv("spec.livenessProbe"), inv("spec.livenessProbe.periodSeconds")}},
		{"exec probe needs a command", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.ReadinessProbe = &virtv1.Probe{Handler: virtv1.Handler{Exec: &k8sv1.ExecAction{}}}
		}, []errKey{req("spec.readinessProbe.exec.command")}},
	}
}

func computeRows() []vmiRow {
	return []vmiRow{
		{"cpu request >= 0", func(v *virtv1.VirtualMachineInstance) { setRes(v, "requests", k8sv1.ResourceCPU, "-1") },
			[]errKey{inv(res + ".requests.cpu")}},
		{"cpu limit >= 0", func(v *virtv1.VirtualMachineInstance) { setRes(v, "limits", k8sv1.ResourceCPU, "-1") },
			[]errKey{inv(res + ".limits.cpu")}},
		{"cpu request <= limit", func(v *virtv1.VirtualMachineInstance) {
			setRes(v, "requests", k8sv1.ResourceCPU, "2")
			setRes(v, "limits", k8sv1.ResourceCPU, "1")
		}, []errKey{inv(res + ".requests.cpu")}},
		{"vCPU count bounded", func(v *virtv1.VirtualMachineInstance) { v.Spec.Domain.CPU.Sockets, v.Spec.Domain.CPU.Cores = 64, 32 },
			[]errKey{inv(cpu)}},
		{"sockets <= maxSockets", func(v *virtv1.VirtualMachineInstance) { v.Spec.Domain.CPU.Sockets, v.Spec.Domain.CPU.MaxSockets = 4, 2 },
			[]errKey{inv(cpu + ".sockets")}},
		{"cpu feature name and policy", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.CPU.Features = []virtv1.CPUFeature{{Name: "vmx", Policy: "require"}, {Policy: "maybe"}}
		}, []errKey{req(cpu + ".features[1].name"), nsup(cpu + ".features[1].policy")}},
		{"isolateEmulatorThread needs dedicated", func(v *virtv1.VirtualMachineInstance) { v.Spec.Domain.CPU.IsolateEmulatorThread = true },
			[]errKey{inv(cpu + ".isolateEmulatorThread")}},
		{"numa passthrough needs dedicated and hugepages", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.CPU.NUMA = &virtv1.NUMA{GuestMappingPassthrough: &virtv1.NUMAGuestMappingPassthrough{}}
		}, []errKey{inv(cpu + ".numa.guestMappingPassthrough")}},
		{"dedicated: whole cpus", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.CPU.DedicatedCPUPlacement = true
			setRes(v, "requests", k8sv1.ResourceCPU, "500m")
		}, []errKey{inv(res + ".requests.cpu")}},
		{"dedicated: requests == limits", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.CPU.DedicatedCPUPlacement = true
			setRes(v, "requests", k8sv1.ResourceCPU, "1")
			setRes(v, "limits", k8sv1.ResourceCPU, "2")
			setRes(v, "limits", k8sv1.ResourceMemory, "2Gi")
		}, []errKey{inv(res + ".requests.cpu"), inv(res + ".requests.memory")}},
		{"dedicated: topology matches request", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.CPU.DedicatedCPUPlacement = true
			setRes(v, "requests", k8sv1.ResourceCPU, "2")
		}, []errKey{inv(res + ".requests.cpu")}},
		{"dedicated: valid", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.CPU.DedicatedCPUPlacement = true
			v.Spec.Domain.CPU.Sockets = 2
			setRes(v, "requests", k8sv1.ResourceCPU, "2")
			setRes(v, "limits", k8sv1.ResourceCPU, "2")
		}, nil},
		{"memory required", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Memory = nil
			v.Spec.Domain.Resources = virtv1.ResourceRequirements{}
		}, []errKey{req(mem + ".guest")}},
		{"memory request >= 1M", func(v *virtv1.VirtualMachineInstance) { setRes(v, "requests", k8sv1.ResourceMemory, "1k") },
			[]errKey{inv(res + ".requests.memory")}},
		{"memory limit >= 1M", func(v *virtv1.VirtualMachineInstance) { setRes(v, "limits", k8sv1.ResourceMemory, "1k") },
			[]errKey{inv(res + ".limits.memory"), inv(res + ".requests.memory"), inv(mem + ".guest")}},
		{"guest >= 1M", func(v *virtv1.VirtualMachineInstance) { v.Spec.Domain.Memory.Guest = qty("10k") }, []errKey{inv(mem + ".guest")}},
		{"guest <= limit", func(v *virtv1.VirtualMachineInstance) {
			setRes(v, "requests", k8sv1.ResourceMemory, "512Mi")
			setRes(v, "limits", k8sv1.ResourceMemory, "512Mi")
		}, []errKey{inv(mem + ".guest")}},
		{"memory request <= limit", func(v *virtv1.VirtualMachineInstance) {
			setRes(v, "limits", k8sv1.ResourceMemory, "1Gi")
			setRes(v, "requests", k8sv1.ResourceMemory, "2Gi")
		},
			[]errKey{inv(res + ".requests.memory")}},
		{"maxGuest >= guest", func(v *virtv1.VirtualMachineInstance) { v.Spec.Domain.Memory.MaxGuest = qty("512Mi") },
			[]errKey{inv(mem + ".maxGuest")}},
		{"memory hotplug from 1Gi", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Memory.Guest, v.Spec.Domain.Memory.MaxGuest = qty("512Mi"), qty("2Gi")
		}, []errKey{inv(mem + ".guest")}},
		{"memory hotplug in whole blocks", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Memory.Guest, v.Spec.Domain.Memory.MaxGuest = qty("1Gi"), qty("2049Mi")
		}, []errKey{inv(mem + ".guest")}},
		{"maxGuest needs guest", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Memory.MaxGuest = qty("4Gi")
			v.Spec.Domain.Memory.Guest = nil
		}, []errKey{req(mem + ".guest")}},
		{"hugepage size", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Memory.Hugepages = &virtv1.Hugepages{PageSize: "4Mi"}
		},
			[]errKey{nsup(mem + ".hugepages.pageSize")}},
		{"hugepages: memory multiple of page", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Memory.Guest = qty("1536Mi")
			v.Spec.Domain.Memory.Hugepages = &virtv1.Hugepages{PageSize: "1Gi"}
		}, []errKey{inv(mem + ".hugepages.pageSize")}},
		{"hugepages: page not larger than memory", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Memory.Guest = qty("512Mi")
			v.Spec.Domain.Memory.Hugepages = &virtv1.Hugepages{PageSize: "1Gi"}
		}, []errKey{inv(mem + ".hugepages.pageSize")}},
		{"hugepages: 2Mi valid", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Memory.Hugepages = &virtv1.Hugepages{PageSize: "2Mi"}
		}, nil},
	}
}

func diskRows() []vmiRow {
	return []vmiRow{
		{"disk name required", func(v *virtv1.VirtualMachineInstance) { disk0(v).Name = "" },
			[]errKey{req(dk + "[0].name"), inv(vol + "[0].name")}},
		{"disk name DNS label", func(v *virtv1.VirtualMachineInstance) {
			disk0(v).Name = "Root_Disk"
			v.Spec.Volumes[0].Name = "Root_Disk"
		},
			[]errKey{inv(dk + "[0].name")}},
		{"disk names unique", func(v *virtv1.VirtualMachineInstance) { v.Spec.Domain.Devices.Disks[1].Name = "rootdisk" },
			[]errKey{dup(dk + "[1].name"), inv(vol + "[1].name")}},
		{"one target per disk", func(v *virtv1.VirtualMachineInstance) { disk0(v).CDRom = &virtv1.CDRomTarget{} },
			[]errKey{inv(dk + "[0]")}},
		{"disk bus values", func(v *virtv1.VirtualMachineInstance) { disk0(v).Disk.Bus = "ide" }, []errKey{nsup(dk + "[0].disk.bus")}},
		{"cdrom not virtio", func(v *virtv1.VirtualMachineInstance) {
			disk0(v).DiskDevice = virtv1.DiskDevice{CDRom: &virtv1.CDRomTarget{Bus: virtv1.DiskBusVirtio}}
		}, []errKey{inv(dk + "[0].cdrom.bus")}},
		{"cdrom on sata valid", func(v *virtv1.VirtualMachineInstance) {
			disk0(v).DiskDevice = virtv1.DiskDevice{CDRom: &virtv1.CDRomTarget{Bus: virtv1.DiskBusSATA}}
		}, nil},
		{"lun bus scsi or virtio", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Volumes[0].VolumeSource = virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
				PersistentVolumeClaimVolumeSource: k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: "pvc"}}}
			disk0(v).DiskDevice = virtv1.DiskDevice{LUN: &virtv1.LunTarget{Bus: virtv1.DiskBusSATA}}
		}, []errKey{inv(dk + "[0].lun.bus")}},
		{"lun needs claim volume", func(v *virtv1.VirtualMachineInstance) {
			disk0(v).DiskDevice = virtv1.DiskDevice{LUN: &virtv1.LunTarget{Bus: virtv1.DiskBusSCSI}}
		}, []errKey{inv(dk + "[0].lun")}},
		{"sata disk not readonly", func(v *virtv1.VirtualMachineInstance) {
			disk0(v).Disk.Bus, disk0(v).Disk.ReadOnly = virtv1.DiskBusSATA, true
		},
			[]errKey{inv(dk + "[0].disk.readonly")}},
		{"pci address only on virtio", func(v *virtv1.VirtualMachineInstance) {
			disk0(v).Disk.Bus, disk0(v).Disk.PciAddress = virtv1.DiskBusSATA, "0000:00:05.0"
		},
			[]errKey{inv(dk + "[0].disk.pciAddress")}},
		{"pci address format", func(v *virtv1.VirtualMachineInstance) { disk0(v).Disk.PciAddress = "0000:00:25.9" },
			[]errKey{inv(dk + "[0].disk.pciAddress")}},
		{"pci address valid", func(v *virtv1.VirtualMachineInstance) { disk0(v).Disk.PciAddress = "0000:0a:1f.7" }, nil},
		{"cdrom tray values", func(v *virtv1.VirtualMachineInstance) {
			disk0(v).DiskDevice = virtv1.DiskDevice{CDRom: &virtv1.CDRomTarget{Tray: "ajar"}}
		}, []errKey{nsup(dk + "[0].cdrom.tray")}},
		{"dedicatedIOThread needs virtio", func(v *virtv1.VirtualMachineInstance) {
			disk0(v).Disk.Bus = virtv1.DiskBusSCSI
			disk0(v).DedicatedIOThread = boolPtr(true)
		}, []errKey{inv(dk + "[0].dedicatedIOThread")}},
		{"bootOrder > 0", func(v *virtv1.VirtualMachineInstance) { disk0(v).BootOrder = uintp(0) }, []errKey{inv(dk + "[0].bootOrder")}},
		{"bootOrder unique", func(v *virtv1.VirtualMachineInstance) {
			disk0(v).BootOrder = uintp(1)
			v.Spec.Domain.Devices.Disks[1].BootOrder = uintp(1)
		}, []errKey{dup(dk + "[1].bootOrder")}},
		{"serial characters", func(v *virtv1.VirtualMachineInstance) { disk0(v).Serial = "a b" }, []errKey{inv(dk + "[0].serial")}},
		{"serial length", func(v *virtv1.VirtualMachineInstance) { disk0(v).Serial = strings.Repeat("a", 257) }, []errKey{tooLong(dk + "[0].serial")}},
		{"cache values", func(v *virtv1.VirtualMachineInstance) { disk0(v).Cache = "unsafe" }, []errKey{nsup(dk + "[0].cache")}},
		{"io values", func(v *virtv1.VirtualMachineInstance) { disk0(v).IO = "io_uring" }, []errKey{nsup(dk + "[0].io")}},
		{"io native needs cache none", func(v *virtv1.VirtualMachineInstance) {
			disk0(v).IO, disk0(v).Cache = virtv1.IONative, virtv1.CacheWriteBack
		},
			[]errKey{inv(dk + "[0].io")}},
		{"io native with cache none", func(v *virtv1.VirtualMachineInstance) {
			disk0(v).IO, disk0(v).Cache = virtv1.IONative, virtv1.CacheNone
		}, nil},
		{"error policy values", func(v *virtv1.VirtualMachineInstance) {
			p := virtv1.DiskErrorPolicy("panic")
			disk0(v).ErrorPolicy = &p
		},
			[]errKey{nsup(dk + "[0].errorPolicy")}},
		{"block size power of 2", func(v *virtv1.VirtualMachineInstance) {
			disk0(v).BlockSize = &virtv1.BlockSize{Custom: &virtv1.CustomBlockSize{Logical: 512, Physical: 3000}}
		}, []errKey{inv(dk + "[0].blockSize.custom.physical")}},
		{"block size logical <= physical", func(v *virtv1.VirtualMachineInstance) {
			disk0(v).BlockSize = &virtv1.BlockSize{Custom: &virtv1.CustomBlockSize{Logical: 4096, Physical: 512}}
		}, []errKey{inv(dk + "[0].blockSize.custom.logical")}},
		{"block size bounds", func(v *virtv1.VirtualMachineInstance) {
			disk0(v).BlockSize = &virtv1.BlockSize{Custom: &virtv1.CustomBlockSize{Logical: 256, Physical: 4 << 20}}
		}, []errKey{inv(dk + "[0].blockSize.custom.logical"), inv(dk + "[0].blockSize.custom.physical")}},
		{"block size custom xor matchVolume", func(v *virtv1.VirtualMachineInstance) {
			disk0(v).BlockSize = &virtv1.BlockSize{Custom: &virtv1.CustomBlockSize{Logical: 512, Physical: 512}, MatchVolume: &virtv1.FeatureState{}}
		}, []errKey{inv(dk + "[0].blockSize")}},
		{"disk names a volume", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks = append(v.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "extra"})
		}, []errKey{nf(dk + "[2].name")}},
		{"an empty cdrom needs no volume", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks = append(v.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "iso", DiskDevice: virtv1.DiskDevice{CDRom: &virtv1.CDRomTarget{}}})
		}, nil},
		{"an empty disk does", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks = append(v.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "iso"})
		}, []errKey{nf(dk + "[2].name")}},
		{"volume used by a disk", func(v *virtv1.VirtualMachineInstance) { v.Spec.Domain.Devices.Disks = v.Spec.Domain.Devices.Disks[:1] },
			[]errKey{inv(vol + "[1].name")}},
	}
}

func volumeRows() []vmiRow {
	pvc := func(name string) virtv1.VolumeSource {
		return virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}
	}
	ci := func(v *virtv1.VirtualMachineInstance) *virtv1.CloudInitNoCloudSource {
		return v.Spec.Volumes[1].CloudInitNoCloud
	}
	return []vmiRow{
		{"volume name required", func(v *virtv1.VirtualMachineInstance) { v.Spec.Volumes[0].Name = "" },
			[]errKey{req(vol + "[0].name"), nf(dk + "[0].name")}},
		{"volume names unique", func(v *virtv1.VirtualMachineInstance) { v.Spec.Volumes[1].Name = "rootdisk" },
			[]errKey{dup(vol + "[1].name"), nf(dk + "[1].name")}},
		{"exactly one source", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Volumes[0].EmptyDisk = &virtv1.EmptyDiskSource{Capacity: *qty("1Gi")}
		},
			[]errKey{inv(vol + "[0]")}},
		{"a source is required", func(v *virtv1.VirtualMachineInstance) { v.Spec.Volumes[0].VolumeSource = virtv1.VolumeSource{} },
			[]errKey{inv(vol + "[0]")}},
		{"container disk image", func(v *virtv1.VirtualMachineInstance) { v.Spec.Volumes[0].ContainerDisk.Image = "" },
			[]errKey{req(vol + "[0].containerDisk.image")}},
		{"container disk path absolute", func(v *virtv1.VirtualMachineInstance) { v.Spec.Volumes[0].ContainerDisk.Path = "disk/../../etc" },
			[]errKey{inv(vol + "[0].containerDisk.path")}},
		{"container disk pull policy", func(v *virtv1.VirtualMachineInstance) { v.Spec.Volumes[0].ContainerDisk.ImagePullPolicy = "Sometimes" },
			[]errKey{nsup(vol + "[0].containerDisk.imagePullPolicy")}},
		{"pvc claim name", func(v *virtv1.VirtualMachineInstance) { v.Spec.Volumes[0].VolumeSource = pvc("") },
			[]errKey{req(vol + "[0].persistentVolumeClaim.claimName")}},
		{"data volume name", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Volumes[0].VolumeSource = virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{}}
		}, []errKey{req(vol + "[0].dataVolume.name")}},
		{"ephemeral claim name", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Volumes[0].VolumeSource = virtv1.VolumeSource{Ephemeral: &virtv1.EphemeralVolumeSource{}}
		}, []errKey{req(vol + "[0].ephemeral.persistentVolumeClaim.claimName")}},
		{"empty disk capacity", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Volumes[0].VolumeSource = virtv1.VolumeSource{EmptyDisk: &virtv1.EmptyDiskSource{}}
		}, []errKey{inv(vol + "[0].emptyDisk.capacity")}},
		{"config map name", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Volumes[0].VolumeSource = virtv1.VolumeSource{ConfigMap: &virtv1.ConfigMapVolumeSource{}}
		}, []errKey{req(vol + "[0].configMap.name")}},
		{"secret name", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Volumes[0].VolumeSource = virtv1.VolumeSource{Secret: &virtv1.SecretVolumeSource{}}
		}, []errKey{req(vol + "[0].secret.secretName")}},
		{"one service account volume", func(v *virtv1.VirtualMachineInstance) {
			sa := virtv1.VolumeSource{ServiceAccount: &virtv1.ServiceAccountVolumeSource{ServiceAccountName: "sa"}}
			v.Spec.Volumes[0].VolumeSource, v.Spec.Volumes[1].VolumeSource = sa, sa
			v.Spec.Volumes[1].ServiceAccount = &virtv1.ServiceAccountVolumeSource{}
		}, []errKey{forb(vol + "[1].serviceAccount"), req(vol + "[1].serviceAccount.serviceAccountName")}},
		{"sysprep source", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Volumes[0].VolumeSource = virtv1.VolumeSource{Sysprep: &virtv1.SysprepSource{}}
		}, []errKey{inv(vol + "[0].sysprep")}},
		{"host disk", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Volumes[0].VolumeSource = virtv1.VolumeSource{HostDisk: &virtv1.HostDisk{Type: "Disk", Capacity: *qty("1Gi")}}
		}, []errKey{req(vol + "[0].hostDisk.path"), inv(vol + "[0].hostDisk.capacity"), forb(vol + "[0].hostDisk")}},
		{"host disk path with ..", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Volumes[0].VolumeSource = virtv1.VolumeSource{HostDisk: &virtv1.HostDisk{Path: "/var/lib/../..", Type: "Disk"}}
		}, []errKey{inv(vol + "[0].hostDisk.path"), forb(vol + "[0].hostDisk")}},
		{"host disk relative path", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Volumes[0].VolumeSource = virtv1.VolumeSource{HostDisk: &virtv1.HostDisk{Path: "disks/d.img", Type: "Disk"}}
		}, []errKey{inv(vol + "[0].hostDisk.path"), forb(vol + "[0].hostDisk")}},
		{"host disk type", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Volumes[0].VolumeSource = virtv1.VolumeSource{HostDisk: &virtv1.HostDisk{Path: "/d.img", Type: "File"}}
		}, []errKey{nsup(vol + "[0].hostDisk.type"), forb(vol + "[0].hostDisk")}},
		{"cloud-init needs data", func(v *virtv1.VirtualMachineInstance) { ci(v).UserData = "" },
			[]errKey{req(vol + "[1].cloudInitNoCloud")}},
		{"cloud-init one user data source", func(v *virtv1.VirtualMachineInstance) { ci(v).UserDataBase64 = "I2Nsb3VkLWNvbmZpZwo=" },
			[]errKey{inv(vol + "[1].cloudInitNoCloud")}},
		{"cloud-init base64", func(v *virtv1.VirtualMachineInstance) { ci(v).UserData, ci(v).NetworkDataBase64 = "", "%%%" },
			[]errKey{inv(vol + "[1].cloudInitNoCloud.networkDataBase64")}},
		{"cloud-init size", func(v *virtv1.VirtualMachineInstance) { ci(v).UserData = strings.Repeat("x", 2049) },
			[]errKey{tooLong(vol + "[1].cloudInitNoCloud.userData")}},
		{"filesystem virtiofs", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Volumes = append(v.Spec.Volumes, virtv1.Volume{Name: "share", VolumeSource: pvc("share")})
			v.Spec.Domain.Devices.Filesystems = []virtv1.Filesystem{{Name: "share"}}
		}, []errKey{req(dev + ".filesystems[0].virtiofs")}},
		{"filesystem names a volume", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Filesystems = []virtv1.Filesystem{{Name: "nope", Virtiofs: &virtv1.FilesystemVirtiofs{}}}
		}, []errKey{nf(dev + ".filesystems[0].name")}},
		{"filesystem shares claims", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks = v.Spec.Domain.Devices.Disks[1:]
			v.Spec.Domain.Devices.Filesystems = []virtv1.Filesystem{{Name: "rootdisk", Virtiofs: &virtv1.FilesystemVirtiofs{}}}
		}, []errKey{inv(dev + ".filesystems[0].name")}},
		{"filesystem valid", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Volumes = append(v.Spec.Volumes, virtv1.Volume{Name: "share", VolumeSource: pvc("share")})
			v.Spec.Domain.Devices.Filesystems = []virtv1.Filesystem{{Name: "share", Virtiofs: &virtv1.FilesystemVirtiofs{}}}
		}, nil},
	}
}

func networkRows() []vmiRow {
	multus := func(v *virtv1.VirtualMachineInstance) {
		v.Spec.Networks = append(v.Spec.Networks, virtv1.Network{Name: "sec", NetworkSource: virtv1.NetworkSource{Multus: &virtv1.MultusNetwork{NetworkName: "br"}}})
		v.Spec.Domain.Devices.Interfaces = append(v.Spec.Domain.Devices.Interfaces, virtv1.Interface{Name: "sec",
			InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Bridge: &virtv1.InterfaceBridge{}}})
	}
	return []vmiRow{
		{"network name required", func(v *virtv1.VirtualMachineInstance) { v.Spec.Networks[0].Name = "" },
			[]errKey{req("spec.networks[0].name"), nf(ifc + "[0].name")}},
		{"network names unique", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Networks = append(v.Spec.Networks, v.Spec.Networks[0])
		}, []errKey{dup("spec.networks[1].name"), forb("spec.networks[1].pod")}},
		{"network needs a source", func(v *virtv1.VirtualMachineInstance) { v.Spec.Networks[0].Pod = nil },
			[]errKey{req("spec.networks[0].pod"), inv(ifc + "[0].masquerade")}},
		{"network needs an interface", func(v *virtv1.VirtualMachineInstance) { v.Spec.Domain.Devices.Interfaces = nil },
			[]errKey{inv("spec.networks[0].name")}},
		{"interface names a network", func(v *virtv1.VirtualMachineInstance) { iface0(v).Name = "other" },
			[]errKey{nf(ifc + "[0].name"), inv("spec.networks[0].name")}},
		{"interface name characters", func(v *virtv1.VirtualMachineInstance) { iface0(v).Name, v.Spec.Networks[0].Name = "a.b", "a.b" },
			[]errKey{inv(ifc + "[0].name")}},
		{"interface names unique", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Interfaces = append(v.Spec.Domain.Devices.Interfaces, *iface0(v))
		}, []errKey{dup(ifc + "[1].name")}},
		{"one binding", func(v *virtv1.VirtualMachineInstance) { iface0(v).Bridge = &virtv1.InterfaceBridge{} }, []errKey{inv(ifc + "[0]")}},
		{"a binding is required", func(v *virtv1.VirtualMachineInstance) { iface0(v).Masquerade = nil }, []errKey{req(ifc + "[0].masquerade")}},
		{"bridge on pod network allowed", func(v *virtv1.VirtualMachineInstance) {
			iface0(v).InterfaceBindingMethod = virtv1.InterfaceBindingMethod{Bridge: &virtv1.InterfaceBridge{}}
		}, nil},
		{"bridge on a secondary network", multus, nil},
		{"masquerade only on pod network", func(v *virtv1.VirtualMachineInstance) {
			multus(v)
			v.Spec.Domain.Devices.Interfaces[1].InterfaceBindingMethod = virtv1.InterfaceBindingMethod{Masquerade: &virtv1.InterfaceMasquerade{}}
		}, []errKey{inv(ifc + "[1].masquerade")}},
		{"masquerade reserved MAC", func(v *virtv1.VirtualMachineInstance) { iface0(v).MacAddress = "02:00:00:00:00:00" },
			[]errKey{inv(ifc + "[0].macAddress")}},
		{"MAC format", func(v *virtv1.VirtualMachineInstance) { iface0(v).MacAddress = "de:ad:be:ef" }, []errKey{inv(ifc + "[0].macAddress")}},
		{"MAC unicast", func(v *virtv1.VirtualMachineInstance) { iface0(v).MacAddress = "01:00:5e:00:00:01" }, []errKey{inv(ifc + "[0].macAddress")}},
		{"MAC unique", func(v *virtv1.VirtualMachineInstance) {
			iface0(v).MacAddress = "de:ad:00:00:be:af"
			multus(v)
			v.Spec.Domain.Devices.Interfaces[1].MacAddress = "DE:AD:00:00:BE:AF"
		}, []errKey{dup(ifc + "[1].macAddress")}},
		{"NIC model", func(v *virtv1.VirtualMachineInstance) { iface0(v).Model = "vmxnet3" }, []errKey{nsup(ifc + "[0].model")}},
		{"NIC PCI address", func(v *virtv1.VirtualMachineInstance) { iface0(v).PciAddress = "00:05.0" }, []errKey{inv(ifc + "[0].pciAddress")}},
		{"NIC bootOrder > 0", func(v *virtv1.VirtualMachineInstance) { iface0(v).BootOrder = uintp(0) }, []errKey{inv(ifc + "[0].bootOrder")}},
		{"bootOrder unique across disks and NICs", func(v *virtv1.VirtualMachineInstance) {
			disk0(v).BootOrder = uintp(1)
			iface0(v).BootOrder = uintp(1)
		}, []errKey{dup(ifc + "[0].bootOrder")}},
		{"port range and protocol", func(v *virtv1.VirtualMachineInstance) {
			iface0(v).Ports = []virtv1.Port{{Port: 0}, {Port: 70000, Protocol: "SCTP"}, {Name: "http", Port: 80}, {Name: "http", Port: 8080}}
		}, []errKey{inv(ifc + "[0].ports[0].port"), inv(ifc + "[0].ports[1].port"), nsup(ifc + "[0].ports[1].protocol"), dup(ifc + "[0].ports[3].name")}},
		{"interface state", func(v *virtv1.VirtualMachineInstance) { iface0(v).State = "gone" }, []errKey{nsup(ifc + "[0].state")}},
		{"pod interface not absent", func(v *virtv1.VirtualMachineInstance) { iface0(v).State = virtv1.InterfaceStateAbsent },
			[]errKey{inv(ifc + "[0].state")}},
		{"DHCP options", func(v *virtv1.VirtualMachineInstance) {
			iface0(v).DHCPOptions = &virtv1.DHCPOptions{PrivateOptions: []virtv1.DHCPPrivateOptions{{Option: 10}}, NTPServers: []string{"ntp.example.org"}}
		}, []errKey{inv(ifc + "[0].dhcpOptions.privateOptions[0].option"), inv(ifc + "[0].dhcpOptions.ntpServers[0]")}},
		{"pod network CIDRs", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Networks[0].Pod = &virtv1.PodNetwork{VMNetworkCIDR: "fd00::/64", VMIPv6NetworkCIDR: "10.0.0.0/8"}
		}, []errKey{inv("spec.networks[0].pod.vmNetworkCIDR"), inv("spec.networks[0].pod.vmIPv6NetworkCIDR")}},
	}
}

func firmwareDeviceRows() []vmiRow {
	hv := func(v *virtv1.VirtualMachineInstance) *virtv1.FeatureHyperv {
		v.Spec.Domain.Features.Hyperv = &virtv1.FeatureHyperv{}
		return v.Spec.Domain.Features.Hyperv
	}
	on := &virtv1.FeatureState{}
	off := &virtv1.FeatureState{Enabled: boolPtr(false)}
	return []vmiRow{
		{"firmware uuid", func(v *virtv1.VirtualMachineInstance) { v.Spec.Domain.Firmware.UUID = "not-a-uuid" }, []errKey{inv(fw + ".uuid")}},
		{"firmware serial", func(v *virtv1.VirtualMachineInstance) { v.Spec.Domain.Firmware.Serial = "a/b" }, []errKey{inv(fw + ".serial")}},
		{"one bootloader", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Firmware.Bootloader = &virtv1.Bootloader{BIOS: &virtv1.BIOS{}, EFI: &virtv1.EFI{SecureBoot: boolPtr(false)}}
		}, []errKey{inv(fw + ".bootloader")}},
		{"secure boot needs SMM", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Firmware.Bootloader = &virtv1.Bootloader{EFI: &virtv1.EFI{}}
		}, []errKey{inv(fw + ".bootloader.efi.secureBoot")}},
		{"secure boot with SMM", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Firmware.Bootloader = &virtv1.Bootloader{EFI: &virtv1.EFI{}}
			v.Spec.Domain.Features.SMM = &virtv1.FeatureState{}
		}, nil},
		{"kernel args need a kernel", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Firmware.KernelBoot = &virtv1.KernelBoot{KernelArgs: "console=ttyS0"}
		}, []errKey{inv(fw + ".kernelBoot.kernelArgs")}},
		{"kernel boot container", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Firmware.KernelBoot = &virtv1.KernelBoot{Container: &virtv1.KernelBootContainer{}}
		}, []errKey{req(fw + ".kernelBoot.container.image"), req(fw + ".kernelBoot.container.kernelPath")}},
		{"kernel boot paths", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Firmware.KernelBoot = &virtv1.KernelBoot{Container: &virtv1.KernelBootContainer{Image: "k", KernelPath: "boot/vmlinuz"}}
		}, []errKey{inv(fw + ".kernelBoot.container.kernelPath")}},
		{"hyperv dependency disabled", func(v *virtv1.VirtualMachineInstance) { h := hv(v); h.SyNIC, h.VPIndex = on, off },
			[]errKey{inv("spec.domain.features.hyperv.vpindex.enabled")}},
		{"hyperv spinlocks", func(v *virtv1.VirtualMachineInstance) {
			hv(v).Spinlocks = &virtv1.FeatureSpinlocks{Retries: u32(100)}
		}, []errKey{inv("spec.domain.features.hyperv.spinlocks.spinlocks")}},
		{"hyperv vendor id", func(v *virtv1.VirtualMachineInstance) {
			hv(v).VendorID = &virtv1.FeatureVendorID{VendorID: "0123456789abc"}
		}, []errKey{tooLong("spec.domain.features.hyperv.vendorid.vendorid")}},
		{"clock offset", func(v *virtv1.VirtualMachineInstance) {
			tz := virtv1.ClockOffsetTimezone("Europe/Paris")
			v.Spec.Domain.Clock = &virtv1.Clock{ClockOffset: virtv1.ClockOffset{UTC: &virtv1.ClockOffsetUTC{}, Timezone: &tz}}
		}, []errKey{inv("spec.domain.clock")}},
		{"timer tick policies", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Clock = &virtv1.Clock{Timer: &virtv1.Timer{HPET: &virtv1.HPETTimer{TickPolicy: "x"}, PIT: &virtv1.PITTimer{TickPolicy: "merge"},
				RTC: &virtv1.RTCTimer{TickPolicy: "merge", Track: "host"}}}
		}, []errKey{nsup("spec.domain.clock.timer.hpet.tickPolicy"), nsup("spec.domain.clock.timer.pit.tickPolicy"),
			nsup("spec.domain.clock.timer.rtc.tickPolicy"), nsup("spec.domain.clock.timer.rtc.track")}},
		{"watchdog device", func(v *virtv1.VirtualMachineInstance) { v.Spec.Domain.Devices.Watchdog = &virtv1.Watchdog{} },
			[]errKey{req(dev + ".watchdog.name"), inv(dev + ".watchdog")}},
		{"watchdog arch", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Watchdog = &virtv1.Watchdog{Name: "w", WatchdogDevice: virtv1.WatchdogDevice{Diag288: &virtv1.Diag288Watchdog{}}}
		}, []errKey{inv(dev + ".watchdog.diag288")}},
		{"watchdog action", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Watchdog = &virtv1.Watchdog{Name: "w", WatchdogDevice: virtv1.WatchdogDevice{I6300ESB: &virtv1.I6300ESBWatchdog{Action: "pause"}}}
		}, []errKey{nsup(dev + ".watchdog.i6300esb.action")}},
		{"inputs", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Inputs = []virtv1.Input{{Bus: "ps2", Type: "mouse"}}
		}, []errKey{req(dev + ".inputs[0].name"), nsup(dev + ".inputs[0].bus"), nsup(dev + ".inputs[0].type")}},
		{"video type", func(v *virtv1.VirtualMachineInstance) { v.Spec.Domain.Devices.Video = &virtv1.VideoDevice{Type: "qxl"} },
			[]errKey{nsup(dev + ".video.type")}},
		{"panic device model", func(v *virtv1.VirtualMachineInstance) {
			m := virtv1.PanicDeviceModel("x")
			v.Spec.Domain.Devices.PanicDevices = []virtv1.PanicDevice{{Model: &m}}
		}, []errKey{nsup(dev + ".panicDevices[0].model")}},
		{"host devices", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.HostDevices = []virtv1.HostDevice{{Name: "a", DeviceName: "x/y"}, {Name: "a"}}
		}, []errKey{dup(dev + ".hostDevices[1].name"), req(dev + ".hostDevices[1].deviceName")}},
		{"io threads policy", func(v *virtv1.VirtualMachineInstance) {
			p := virtv1.IOThreadsPolicy("many")
			v.Spec.Domain.IOThreadsPolicy = &p
		},
			[]errKey{nsup("spec.domain.ioThreadsPolicy")}},
		{"supplemental pool needs count", func(v *virtv1.VirtualMachineInstance) {
			p := virtv1.IOThreadsPolicySupplementalPool
			v.Spec.Domain.IOThreadsPolicy = &p
		}, []errKey{req("spec.domain.ioThreads.supplementalPoolThreadCount")}},
		{"pool count needs supplemental pool", func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.IOThreads = &virtv1.DiskIOThreads{SupplementalPoolThreadCount: u32(2)}
		}, []errKey{inv("spec.domain.ioThreads.supplementalPoolThreadCount")}},
	}
}
