package snapshot

import (
	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
)

// Content is the VirtualMachineSnapshotContent of snap, a snapshot of vm
// whose volumes plan says what to do with: the VM as it is (its metadata
// without managed fields, its spec, no status) and a backup of each
// included claim (its metadata and spec as claims holds them), each to be
// copied by the VolumeSnapshot [VolumeSnapshotName] names.
func Content(snap *vmsnapshotv1.VirtualMachineSnapshot, vm *virtv1.VirtualMachine, plan Plan, claims map[string]*corev1.PersistentVolumeClaim) *vmsnapshotv1.VirtualMachineSnapshotContent {
	meta := *vm.ObjectMeta.DeepCopy()
	meta.ManagedFields = nil
	c := &vmsnapshotv1.VirtualMachineSnapshotContent{
		TypeMeta: metav1.TypeMeta{APIVersion: vmsnapshotv1.SchemeGroupVersion.String(), Kind: "VirtualMachineSnapshotContent"},
		ObjectMeta: metav1.ObjectMeta{Name: ContentName(snap.UID), Namespace: snap.Namespace,
			Finalizers: []string{ContentFinalizer}},
		Spec: vmsnapshotv1.VirtualMachineSnapshotContentSpec{
			VirtualMachineSnapshotName: ptr.To(snap.Name),
			Source: vmsnapshotv1.SourceSpec{VirtualMachine: &vmsnapshotv1.VirtualMachine{
				ObjectMeta: meta, Spec: *vm.Spec.DeepCopy()}},
		},
	}
	for _, v := range plan.Included {
		pvc := claims[v.Claim]
		if pvc == nil {
			continue
		}
		pm := *pvc.ObjectMeta.DeepCopy()
		pm.ManagedFields = nil
		c.Spec.VolumeBackups = append(c.Spec.VolumeBackups, vmsnapshotv1.VolumeBackup{
			VolumeName:            v.Name,
			PersistentVolumeClaim: vmsnapshotv1.PersistentVolumeClaim{ObjectMeta: pm, Spec: *pvc.Spec.DeepCopy()},
			VolumeSnapshotName:    ptr.To(VolumeSnapshotName(snap.UID, v.Name)),
		})
	}
	return c
}

// VolumeSnapshot is the VolumeSnapshot of one backup of content, of the
// VolumeSnapshotClass class, owned by the content (so it goes with it).
func VolumeSnapshot(content *vmsnapshotv1.VirtualMachineSnapshotContent, b vmsnapshotv1.VolumeBackup, class string) *volumesnapshotv1.VolumeSnapshot {
	vm := content.Spec.Source.VirtualMachine
	vs := &volumesnapshotv1.VolumeSnapshot{
		TypeMeta: metav1.TypeMeta{APIVersion: volumesnapshotv1.SchemeGroupVersion.String(), Kind: "VolumeSnapshot"},
		ObjectMeta: metav1.ObjectMeta{Name: ptr.Deref(b.VolumeSnapshotName, ""), Namespace: content.Namespace,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: vmsnapshotv1.SchemeGroupVersion.String(), Kind: "VirtualMachineSnapshotContent",
				Name: content.Name, UID: content.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: volumesnapshotv1.VolumeSnapshotSpec{
			Source:                  volumesnapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To(b.PersistentVolumeClaim.Name)},
			VolumeSnapshotClassName: ptr.To(class),
		},
	}
	if vm != nil {
		vs.Labels = map[string]string{SourceNameLabel: vm.Name, SourceNamespaceLabel: vm.Namespace}
	}
	return vs
}
