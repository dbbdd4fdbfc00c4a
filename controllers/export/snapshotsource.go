package export

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	exportv1 "kubevirt.io/api/export/v1beta1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/storage/dvspec"
	"github.com/virtkit/virtkit/virt/storage/export"
	"github.com/virtkit/virtkit/virt/storage/snapshot"
)

// snapshotSource: the snapshot must be ready to use; each claim it backed
// up is restored, from its VolumeSnapshot, into a claim the export owns
// (<export>-<claim>), served under the backed-up claim's name. The claims
// are not waited for: the server pod is their first consumer.
func (r *Reconciler) snapshotSource(ctx context.Context, vme *exportv1.VirtualMachineExport) (source, error) {
	key := client.ObjectKey{Namespace: vme.Namespace, Name: vme.Spec.Source.Name}
	snap := &vmsnapshotv1.VirtualMachineSnapshot{}
	switch err := r.client.Get(ctx, key, snap); {
	case apierrors.IsNotFound(err):
		return source{skip: true, reason: ReasonSnapshotNotFound, message: fmt.Sprintf("VirtualMachineSnapshot %s not found", key)}, nil
	case err != nil:
		return source{}, fmt.Errorf("reading VirtualMachineSnapshot %s: %w", key, err)
	}
	s := source{vm: ptr.To(snap.Spec.Source.Name), sizes: map[string]resource.Quantity{}}
	if !snapshot.Ready(snap) {
		s.wait, s.reason, s.message = true, ReasonSnapshotNotReady, fmt.Sprintf("VirtualMachineSnapshot %s is not ready to use", key)
		return s, nil
	}
	content := &vmsnapshotv1.VirtualMachineSnapshotContent{}
	ckey := client.ObjectKey{Namespace: vme.Namespace, Name: *snap.Status.VirtualMachineSnapshotContentName}
	if err := r.client.Get(ctx, ckey, content); err != nil {
		if apierrors.IsNotFound(err) {
			s.wait, s.reason, s.message = true, ReasonSnapshotNotReady, fmt.Sprintf("VirtualMachineSnapshotContent %s not found", ckey)
			return s, nil
		}
		return source{}, fmt.Errorf("reading VirtualMachineSnapshotContent %s: %w", ckey, err)
	}
	if v := content.Spec.Source.VirtualMachine; v != nil {
		s.vmObj = &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: v.Name, Namespace: v.Namespace, Labels: v.Labels,
			Annotations: v.Annotations}, Spec: v.Spec}
	}
	kinds := volumeKinds(content)
	made := 0
	for _, b := range content.Spec.VolumeBackups {
		if b.VolumeSnapshotName == nil {
			continue
		}
		name := export.ClaimName(vme.Name, b.PersistentVolumeClaim.Name)
		pvc, err := r.ensureRestoredClaim(ctx, vme, b, name, kinds[b.VolumeName])
		if err != nil {
			return source{}, err
		}
		made++
		v := export.ClaimVolume(pvc, nil)
		v.Name = b.PersistentVolumeClaim.Name
		s.vols = append(s.vols, v)
		s.sizes[pvc.Name] = claimSize(pvc)
	}
	if made == 0 {
		msg := fmt.Sprintf("VirtualMachineSnapshot %s has no volume snapshots", key)
		s.skip, s.reason, s.message = true, ReasonSnapshotNoVolumes, msg
		s.volumesCond = cond(exportv1.ConditionVolumesCreated, false, ReasonSnapshotNoVolumes, msg)
		return s, nil
	}
	s.volumesCond = cond(exportv1.ConditionVolumesCreated, true, ReasonAllClaimsReady, "")
	return s, nil
}

// volumeKinds says which volumes of the snapshot's VM are disks (a claim
// or a DataVolume), whose restored claims hold disk images.
func volumeKinds(c *vmsnapshotv1.VirtualMachineSnapshotContent) map[string]bool {
	disks := map[string]bool{}
	if vm := c.Spec.Source.VirtualMachine; vm != nil && vm.Spec.Template != nil {
		for _, v := range vm.Spec.Template.Spec.Volumes {
			disks[v.Name] = v.PersistentVolumeClaim != nil || v.DataVolume != nil
		}
	}
	return disks
}

// ensureRestoredClaim makes the claim name from backup b, owned by vme,
// unless it exists; one of that name vme does not own is an error.
func (r *Reconciler) ensureRestoredClaim(ctx context.Context, vme *exportv1.VirtualMachineExport, b vmsnapshotv1.VolumeBackup, name string, disk bool) (*corev1.PersistentVolumeClaim, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	key := client.ObjectKey{Namespace: vme.Namespace, Name: name}
	switch err := r.client.Get(ctx, key, pvc); {
	case err == nil:
		if !metav1.IsControlledBy(pvc, vme) {
			return nil, fmt.Errorf("claim %s exists and is not export %s's", key, vme.Name)
		}
		return pvc, nil
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading claim %s: %w", key, err)
	}
	pvc = snapshot.ClaimFromBackup(b, vme.Namespace, name)
	pvc.OwnerReferences = []metav1.OwnerReference{owner(vme)}
	if disk {
		if pvc.Annotations == nil {
			pvc.Annotations = map[string]string{}
		}
		pvc.Annotations[dvspec.AnnContentType] = string(cdiv1.DataVolumeKubeVirt)
	}
	if err := r.client.Create(ctx, pvc); err != nil {
		return nil, fmt.Errorf("creating claim %s from VolumeSnapshot %s: %w", key, ptr.Deref(b.VolumeSnapshotName, ""), err)
	}
	r.recorder.Eventf(vme, corev1.EventTypeNormal, EventClaimCreated, "Created claim %s from VolumeSnapshot %s", name, ptr.Deref(b.VolumeSnapshotName, ""))
	return pvc, nil
}
