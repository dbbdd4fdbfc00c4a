package storageprofile

import (
	corev1 "k8s.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
)

// LocalProvisioner is virt-local's CSI driver (local/csidriver.Name).
const LocalProvisioner = "local.csi.virtkit.io"

// Capabilities are the claim property sets known for a provisioner, the
// best first; ok is false for a provisioner virtkit does not know, whose
// StorageProfile then needs its spec filled (DataVolumes fall back to
// ReadWriteOnce and Filesystem meanwhile). The entries are what CDI
// records for the same provisioners.
func Capabilities(provisioner string) (sets []cdiv1.ClaimPropertySet, ok bool) {
	rwo, rwx := corev1.ReadWriteOnce, corev1.ReadWriteMany
	set := func(am corev1.PersistentVolumeAccessMode, m corev1.PersistentVolumeMode) cdiv1.ClaimPropertySet {
		return cdiv1.ClaimPropertySet{AccessModes: []corev1.PersistentVolumeAccessMode{am}, VolumeMode: &m}
	}
	block, fs := corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem
	switch provisioner {
	case LocalProvisioner:
		// Every node reaches every folder: ReadWriteMany is honest, and
		// what live migration needs. (The driver serves Block volumes, but
		// virt-local's process nodes do not take a pod's volumeDevices.)
		return []cdiv1.ClaimPropertySet{set(rwx, fs), set(rwo, fs)}, true
	case "rancher.io/local-path", "kubevirt.io.hostpath-provisioner", "kubevirt.io/hostpath-provisioner":
		return []cdiv1.ClaimPropertySet{set(rwo, fs)}, true
	case "topolvm.io", "topolvm.cybozu.com":
		return []cdiv1.ClaimPropertySet{set(rwo, block), set(rwo, fs)}, true
	case "openshift-storage.rbd.csi.ceph.com", "rook-ceph.rbd.csi.ceph.com":
		return []cdiv1.ClaimPropertySet{set(rwx, block), set(rwo, block), set(rwo, fs)}, true
	case "openshift-storage.cephfs.csi.ceph.com", "rook-ceph.cephfs.csi.ceph.com":
		return []cdiv1.ClaimPropertySet{set(rwx, fs)}, true
	}
	return nil, false
}
