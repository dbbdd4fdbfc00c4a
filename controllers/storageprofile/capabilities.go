package storageprofile

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
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

// AdvisedCloneStrategy is the clone strategy known to suit provisioner
// best, if one is known: virt-local's driver clones a volume with one
// copy (a reflink where the file system has them), where a snapshot clone
// copies twice; Ceph's RBD and CephFS drivers clone natively, as CDI
// advises.
func AdvisedCloneStrategy(provisioner string) (cdiv1.CDICloneStrategy, bool) {
	switch provisioner {
	case LocalProvisioner, "rbd.csi.ceph.com", "rook-ceph.rbd.csi.ceph.com", "openshift-storage.rbd.csi.ceph.com",
		"cephfs.csi.ceph.com", "rook-ceph.cephfs.csi.ceph.com", "openshift-storage.cephfs.csi.ceph.com":
		return cdiv1.CloneStrategyCsiClone, true
	}
	return "", false
}

// CloneStrategy is how claims of sc are cloned, as CDI decides it for a
// StorageProfile's status: spec (the profile's), else the class's
// AnnCloneStrategy, else the strategy advised for its provisioner, else a
// snapshot clone when the VolumeSnapshotClass snapClass serves the class;
// a snapshot clone without a snapshot class is a copy (host-assisted).
func CloneStrategy(spec *cdiv1.CDICloneStrategy, sc *storagev1.StorageClass, snapClass string) cdiv1.CDICloneStrategy {
	if spec != nil {
		return *spec
	}
	switch sc.Annotations[AnnCloneStrategy] {
	case "copy":
		return cdiv1.CloneStrategyHostAssisted
	case "snapshot":
		return cdiv1.CloneStrategySnapshot
	case "csi-clone":
		return cdiv1.CloneStrategyCsiClone
	}
	s := cdiv1.CloneStrategyHostAssisted
	if snapClass != "" {
		s = cdiv1.CloneStrategySnapshot
	}
	if a, ok := AdvisedCloneStrategy(sc.Provisioner); ok {
		s = a
	}
	if s == cdiv1.CloneStrategySnapshot && snapClass == "" {
		return cdiv1.CloneStrategyHostAssisted
	}
	return s
}
