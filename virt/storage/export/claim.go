package export

import (
	"path"

	corev1 "k8s.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/virtkit/virtkit/virt/storage/dvspec"
)

// Where a server pod finds its claims: a file system claim is mounted
// (read-only) at MountPath, a Block claim's device is at DevicePath.
const (
	mountRoot  = "/export-volumes"
	deviceRoot = "/dev/export-volumes"
)

// MountPath is where a server pod mounts the file system claim claim.
func MountPath(claim string) string { return path.Join(mountRoot, claim) }

// DevicePath is where a server pod finds the device of the Block claim
// claim.
func DevicePath(claim string) string { return path.Join(deviceRoot, claim) }

// ClaimVolume is how pvc is served, as KubeVirt decides: a Block claim
// holds a disk image, and so does a claim whose CDI content type
// annotation says kubevirt (or is empty) or, failing that, whose owning
// DataVolume ownerDV (nil: none) has that content type; any other claim
// (a plain claim with no annotation among them) is an archive.
func ClaimVolume(pvc *corev1.PersistentVolumeClaim, ownerDV *cdiv1.DataVolume) Volume {
	if dvspec.IsBlock(pvc) {
		return Volume{Claim: pvc.Name, Path: DevicePath(pvc.Name), Block: true, Content: DiskImage}
	}
	kubevirt := func(ct string) bool { return ct == "" || ct == string(cdiv1.DataVolumeKubeVirt) }
	c := Archive
	if ct, ok := pvc.Annotations[dvspec.AnnContentType]; ok && kubevirt(ct) {
		c = DiskImage
	} else if ownerDV != nil && kubevirt(string(ownerDV.Spec.ContentType)) {
		c = DiskImage
	}
	return Volume{Claim: pvc.Name, Path: MountPath(pvc.Name), Content: c}
}
