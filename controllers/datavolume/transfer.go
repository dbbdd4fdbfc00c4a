package datavolume

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/storage/dvspec"
	"github.com/virtkit/virtkit/virt/storage/snapshot"
)

// A CSI clone into another namespace, as CDI makes one (and a restore of a
// VolumeSnapshot of another namespace, the same way): the driver clones
// the source into a claim of the source's namespace
// (dvspec.TransferClaimName, held by the clone finalizer like the
// host-assisted clone's pod), then that claim's volume is bound to the
// DataVolume's claim, which names it (spec.volumeName) so that no
// provisioner makes another, by pointing the volume's claimRef at it; the
// claim left behind in the source's namespace is then deleted. Deleting
// the DataVolume at any step leaves one claim owning the volume, which
// goes with it.

// transferClaim returns want, a claim of dv whose source src is of
// another namespace, naming the volume the driver made there in the
// transfer claim of class from ds (the source claim, or a VolumeSnapshot);
// or nil, with o saying why, while that claim is not bound yet.
func (r *Reconciler) transferClaim(ctx context.Context, dv *cdiv1.DataVolume, src dvspec.Source, ds corev1.TypedLocalObjectReference, class *string, want *corev1.PersistentVolumeClaim, o *Observed) (*corev1.PersistentVolumeClaim, error) {
	if err := r.holdForClone(ctx, dv, src); err != nil {
		return nil, err
	}
	key := client.ObjectKey{Namespace: src.SourceNamespace(), Name: dvspec.TransferClaimName(dv.UID)}
	tmp := &corev1.PersistentVolumeClaim{}
	switch err := r.client.Get(ctx, key, tmp); {
	case apierrors.IsNotFound(err):
		tmp = &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
				Labels:      map[string]string{dvspec.LabelApp: dvspec.AppCDI},
				Annotations: map[string]string{dvspec.AnnCloneRequest: dv.Namespace + "/" + dv.Name}},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: want.Spec.AccessModes, VolumeMode: want.Spec.VolumeMode,
				StorageClassName: class, Resources: want.Spec.Resources,
				DataSource:    &ds,
				DataSourceRef: &corev1.TypedObjectReference{APIGroup: ds.APIGroup, Kind: ds.Kind, Name: ds.Name}},
		}
		if err := r.client.Create(ctx, tmp); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating the clone's claim %s: %w", key, err)
		}
		o.Preparing = transferPhase(ds)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the clone's claim %s: %w", key, err)
	case tmp.Status.Phase != corev1.ClaimBound || tmp.Spec.VolumeName == "":
		o.Preparing = transferPhase(ds)
		return nil, nil
	}
	want.Spec.VolumeName = tmp.Spec.VolumeName
	return want, nil
}

// transferPhase is the phase of a DataVolume whose transfer claim is made
// from ds, as it would be without a transfer.
func transferPhase(ds corev1.TypedLocalObjectReference) cdiv1.DataVolumePhase {
	if snapshot.RestoresVolumeSnapshot(&ds) {
		return cdiv1.CloneFromSnapshotSourceInProgress
	}
	return cdiv1.CSICloneInProgress
}

// rebind points the volume that claim, dv's, names at claim, once the
// transfer claim holds it, then deletes the transfer claim: the claims'
// binder then binds claim.
func (r *Reconciler) rebind(ctx context.Context, dv *cdiv1.DataVolume, claim *corev1.PersistentVolumeClaim) error {
	ns := dv.Annotations[AnnCloneSourceNamespace]
	if claim.Spec.VolumeName == "" || ns == "" {
		return nil
	}
	pv := &corev1.PersistentVolume{}
	if err := r.apiReader.Get(ctx, client.ObjectKey{Name: claim.Spec.VolumeName}, pv); err != nil {
		return fmt.Errorf("reading volume %s of claim %s/%s: %w", claim.Spec.VolumeName, claim.Namespace, claim.Name, err)
	}
	tmp := dvspec.TransferClaimName(dv.UID)
	switch ref := pv.Spec.ClaimRef; {
	case ref != nil && ref.Namespace == claim.Namespace && ref.Name == claim.Name && ref.UID == claim.UID:
		// Rebound: the transfer claim, now without a volume, goes.
		return r.deleteTransferClaim(ctx, ns, tmp)
	case ref == nil || ref.Namespace != ns || ref.Name != tmp:
		return fmt.Errorf("volume %s of claim %s/%s is bound to %v, not to the clone's claim %s/%s", pv.Name, claim.Namespace, claim.Name, ref, ns, tmp)
	}
	pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
		Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID, ResourceVersion: claim.ResourceVersion}
	if err := r.client.Update(ctx, pv); err != nil {
		return fmt.Errorf("binding volume %s to claim %s/%s: %w", pv.Name, claim.Namespace, claim.Name, err)
	}
	return nil
}

// deleteTransferClaim deletes the claim name a CSI clone into another
// namespace made in namespace ns, if it is there.
func (r *Reconciler) deleteTransferClaim(ctx context.Context, ns, name string) error {
	tmp := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := r.client.Delete(ctx, tmp); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the clone's claim %s/%s: %w", ns, name, err)
	}
	return nil
}
