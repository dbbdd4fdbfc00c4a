package contract

import (
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
)

// Volume hotplug, as KubeVirt does it: the VMI controller makes an
// attachment pod on the launcher's node that mounts the hotplugged claim
// (so the node attaches and mounts it as for any pod), and the node's
// handler binds the claim's image from that pod's volume into the launcher
// pod's HotplugVolume, whose mount propagation (HostToContainer) carries the
// bind into the running launcher.
const (
	// HotplugVolume names the launcher pod's emptyDir volume that receives
	// hotplugged images; the pod sees it at storage.Layout.HotplugDir.
	HotplugVolume = "hotplug-disks"
	// HotplugLabelValue is the kubevirt.io label of attachment pods
	// (KubeVirt's "hotplug-disk").
	HotplugLabelValue = "hotplug-disk"
	// HotplugContainer names an attachment pod's one container.
	HotplugContainer = "hotplug-disk"
	// HotplugPodPrefix is the generateName of attachment pods.
	HotplugPodPrefix = "hp-volume-"
	// HotplugMountDir is where an attachment pod's container mounts each
	// claim: HotplugMountDir/<volume>.
	HotplugMountDir = "/path"
	// HotplugDeviceVolume names the emptyDir of an attachment pod of a
	// Block claim, mounted at HotplugMountDir: the container runtime makes
	// the claim's device node at HotplugMountDir/<volume>, so inside that
	// folder on the node, where the handler reads the device's numbers
	// (AttachPodDevice), as KubeVirt's handler does.
	HotplugDeviceVolume = "hotplug-devices"
	// FlagHold makes the launcher binary hold its pod's volumes instead of
	// running a VMI: it sleeps until SIGTERM or SIGINT and exits 0. It is
	// an attachment pod's command.
	FlagHold = "hold"
)

// CSIVolumeDir is the node folder where the kubelet (and a local node)
// publishes the CSI PersistentVolume pv for the pod whose UID is pod, under
// podsDir: the kubelet's layout.
func CSIVolumeDir(podsDir string, pod types.UID, pv string) string {
	return filepath.Join(podsDir, string(pod), "volumes", "kubernetes.io~csi", pv, "mount")
}

// Annotations of an attachment pod naming its VMI (KubeVirt's), for when
// the owner chain through the launcher pod cannot be followed.
const (
	OwnerVMINameAnnotation = "kubevirt.io/owner-vmi-name"
	OwnerVMIUIDAnnotation  = "kubevirt.io/owner-vmi-uid"
)

// AttachPodDevice is the node path of the device node of the Block claim
// of volume in the attachment pod whose UID is pod (HotplugDeviceVolume).
func AttachPodDevice(podsDir string, pod types.UID, volume string) string {
	return filepath.Join(EmptyDir(podsDir, pod, HotplugDeviceVolume), volume)
}
