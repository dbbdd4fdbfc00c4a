package storage

import (
	"path"
	"path/filepath"
)

// Pod is what the planner knows about the launcher pod a VMI runs in: how
// each volume reached the pod, and the data of secrets cloud-init reads.
// The handler fills it from the pod spec, the claims and the mounts it sees;
// fields left empty take KubeVirt's layout (see Layout).
type Pod struct {
	// Volumes holds facts per VMI volume name.
	Volumes map[string]VolumeFacts `json:"volumes,omitempty"`
	// Secrets holds, by secret name, the data of the secrets that
	// cloudInitNoCloud and cloudInitConfigDrive volumes reference
	// (secretRef, networkDataSecretRef), and of the access credentials'
	// Secrets whose SSH keys cloud-init propagates.
	Secrets map[string]map[string][]byte `json:"secrets,omitempty"`
}

// VolumeMode is a claim's volume mode, as in PersistentVolumeClaim.spec.volumeMode.
type VolumeMode string

const (
	VolumeModeFilesystem VolumeMode = "Filesystem"
	VolumeModeBlock      VolumeMode = "Block"
)

// VolumeFacts describe how one volume reached the pod.
type VolumeFacts struct {
	// Mode is a claim's (persistentVolumeClaim, dataVolume, ephemeral)
	// volume mode; empty means Filesystem.
	Mode VolumeMode `json:"mode,omitempty"`
	// Path is where the volume is in the pod:
	//   - Filesystem claim: the folder it is mounted on (disk.img is in it);
	//   - Block claim: the block device;
	//   - containerDisk: the disk image file the container image provides;
	//   - configMap, secret, serviceAccount, downwardAPI: the folder of files.
	// Empty takes the Layout's default for the volume.
	Path string `json:"path,omitempty"`
	// ReadOnly is set when the claim is mounted read-only (ReadOnlyMany
	// access, or readOnly on the volume source).
	ReadOnly bool `json:"readOnly,omitempty"`
	// CapacityBytes is a claim's capacity (status.capacity.storage). Zero
	// means unknown: no size check, and an absent disk.img cannot be created.
	CapacityBytes int64 `json:"capacityBytes,omitempty"`
	// LogicalBlockSize and PhysicalBlockSize are the storage's block sizes;
	// they are copied into the plan.
	LogicalBlockSize  uint `json:"logicalBlockSize,omitempty"`
	PhysicalBlockSize uint `json:"physicalBlockSize,omitempty"`
}

// Layout is where a launcher pod keeps volumes. The zero value is
// KubeVirt's layout (DefaultLayout()); tests point it at a temporary folder.
type Layout struct {
	// EphemeralDir holds overlays, emptyDisks and cloud-init ISOs.
	// Default /var/run/kubevirt-ephemeral-disks.
	EphemeralDir string `json:"ephemeralDir,omitempty"`
	// PrivateDir holds claim mounts (vmi-disks/NAME/), projected config
	// folders and config ISOs. Default /var/run/kubevirt-private.
	PrivateDir string `json:"privateDir,omitempty"`
	// ContainerDisksDir holds the containerDisk images (disk_N.img, N the
	// volume's index in spec.volumes, as KubeVirt numbers them). Default
	// /var/run/kubevirt/container-disks.
	ContainerDisksDir string `json:"containerDisksDir,omitempty"`
	// HotplugDir holds hotplugged claims: NAME.img (Filesystem) or NAME
	// (Block). Default /var/run/kubevirt/hotplug-disks.
	HotplugDir string `json:"hotplugDir,omitempty"`
	// DevDir holds the devices of Block claims (DevDir/NAME). Default /dev.
	DevDir string `json:"devDir,omitempty"`
}

// DefaultLayout is KubeVirt's launcher layout.
func DefaultLayout() Layout {
	return Layout{
		EphemeralDir:      EphemeralDisksDir,
		PrivateDir:        PrivateDir,
		ContainerDisksDir: "/var/run/kubevirt/container-disks",
		HotplugDir:        "/var/run/kubevirt/hotplug-disks",
		DevDir:            "/dev",
	}
}

func (l Layout) withDefaults() Layout {
	d := DefaultLayout()
	if l.EphemeralDir != "" {
		d.EphemeralDir = l.EphemeralDir
	}
	if l.PrivateDir != "" {
		d.PrivateDir = l.PrivateDir
	}
	if l.ContainerDisksDir != "" {
		d.ContainerDisksDir = l.ContainerDisksDir
	}
	if l.HotplugDir != "" {
		d.HotplugDir = l.HotplugDir
	}
	if l.DevDir != "" {
		d.DevDir = l.DevDir
	}
	return d
}

// DiskImageName is the image file in a Filesystem claim.
const DiskImageName = "disk.img"

func (l Layout) claimDir(vol string) string { return filepath.Join(l.PrivateDir, "vmi-disks", vol) }

// CloudInitSecretDir is where the launcher pod mounts the secret that the
// cloud-init volume named volume takes its user data (network false) or
// network data (network true) from: a secret volume of the pod, so that
// the handler reads it in the pod and needs no access to Secrets of its
// own. Empty fields of l take KubeVirt's layout.
func (l Layout) CloudInitSecretDir(volume string, network bool) string {
	which := "userdata"
	if network {
		which = "networkdata"
	}
	return path.Join(l.withDefaults().PrivateDir, "secret", volume, which)
}

// HostDiskFile is the name of a hostDisk's image in its folder: the last
// element of path, which the launcher pod reaches as that file in the
// folder where path's folder is mounted (the volume's claim folder, as in
// KubeVirt). ok is false when path names no file ("/", ".."). Paths are
// the node's, slash-separated whatever the GOOS.
func HostDiskFile(p string) (name string, ok bool) {
	name = path.Base(path.Clean(p))
	return name, name != "/" && name != "." && name != ".."
}
func (l Layout) overlay(vol string) string {
	return filepath.Join(l.EphemeralDir, "disk-data", vol, "disk.qcow2")
}
func (l Layout) emptyDisk(vol string) string {
	return filepath.Join(l.EphemeralDir, "empty-disks", vol+".qcow2")
}
func (l Layout) cloudInitDir(ns, name string) string {
	return filepath.Join(l.EphemeralDir, "cloud-init-data", ns, name)
}
func (l Layout) configISO(vol string) string {
	return filepath.Join(l.PrivateDir, "config-disks", vol+".iso")
}
