package clone

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clonev1 "kubevirt.io/api/clone/v1beta1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
)

// Target is the VM c makes: its spec.target, named (when the webhook did
// not name it) from the source and c's UID.
func Target(c *clonev1.VirtualMachineClone) corev1.TypedLocalObjectReference {
	t := corev1.TypedLocalObjectReference{APIGroup: ptr.To(VirtualMachineGroup), Kind: VirtualMachineKind}
	if c.Spec.Target != nil {
		t = *c.Spec.Target.DeepCopy()
	}
	if t.Name == "" && c.Spec.Source != nil {
		t.Name = TargetName(c.Spec.Source.Name, SuffixOf(string(c.UID)))
	}
	return t
}

// Snapshot is the temporary VirtualMachineSnapshot a clone of VM vm
// takes, owned by c.
func Snapshot(c *clonev1.VirtualMachineClone, vm string) *vmsnapshotv1.VirtualMachineSnapshot {
	return &vmsnapshotv1.VirtualMachineSnapshot{
		TypeMeta: metav1.TypeMeta{APIVersion: vmsnapshotv1.SchemeGroupVersion.String(), Kind: "VirtualMachineSnapshot"},
		ObjectMeta: metav1.ObjectMeta{Name: SnapshotName(c.UID), Namespace: c.Namespace,
			OwnerReferences: []metav1.OwnerReference{OwnerReference(c)}},
		Spec: vmsnapshotv1.VirtualMachineSnapshotSpec{Source: corev1.TypedLocalObjectReference{
			APIGroup: ptr.To(VirtualMachineGroup), Kind: VirtualMachineKind, Name: vm}},
	}
}

// Restore is the VirtualMachineRestore that makes c's target from
// snapshot snap with patches (Patches), owned by c.
func Restore(c *clonev1.VirtualMachineClone, snap string, patches []string) *vmsnapshotv1.VirtualMachineRestore {
	rs := &vmsnapshotv1.VirtualMachineRestore{
		TypeMeta: metav1.TypeMeta{APIVersion: vmsnapshotv1.SchemeGroupVersion.String(), Kind: "VirtualMachineRestore"},
		ObjectMeta: metav1.ObjectMeta{Name: RestoreName(c.UID), Namespace: c.Namespace,
			OwnerReferences: []metav1.OwnerReference{OwnerReference(c)}},
		Spec: vmsnapshotv1.VirtualMachineRestoreSpec{Target: Target(c), VirtualMachineSnapshotName: snap, Patches: patches},
	}
	if p := c.Spec.VolumeNamePolicy; p != nil {
		rs.Spec.VolumeRestorePolicy = ptr.To(p.ToVolumeRestorePolicy())
	}
	return rs
}

// CheckContent says whether content holds every claim of its VM: a clone
// of a snapshot that left a claim out would boot without that disk's
// data. The error names each volume missing.
func CheckContent(content *vmsnapshotv1.VirtualMachineSnapshotContent) error {
	vm := content.Spec.Source.VirtualMachine
	if vm == nil {
		return fmt.Errorf("VirtualMachineSnapshotContent %s holds no VirtualMachine", content.Name)
	}
	if vm.Spec.Template == nil {
		return nil
	}
	backed := map[string]bool{}
	for _, b := range content.Spec.VolumeBackups {
		backed[b.VolumeName] = b.VolumeSnapshotName != nil
	}
	var errs []error
	for _, v := range vm.Spec.Template.Spec.Volumes {
		if (v.PersistentVolumeClaim != nil || v.DataVolume != nil) && !backed[v.Name] {
			errs = append(errs, fmt.Errorf("volume %s is not backed up in snapshot %s", v.Name, ptr.Deref(content.Spec.VirtualMachineSnapshotName, content.Name)))
		}
	}
	return errors.Join(errs...)
}
