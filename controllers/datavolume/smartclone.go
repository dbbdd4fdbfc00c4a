package datavolume

import (
	"context"
	"fmt"

	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/storage/dvspec"
	"github.com/virtkit/virtkit/virt/storage/snapshot"
)

// smartClaim decides how the claim want of dv, a clone of a claim, is
// filled (dvspec.ChooseClone, from the StorageProfile of its class) and returns
// it ready to create: a CSI clone names its source claim as its data
// source, a snapshot clone the VolumeSnapshot made of the source first.
// The choice is recorded on the claim (dvspec.AnnCloneType).
//
// A smart clone's claim is made only once its source is bound and no pod
// uses it, for the storage copies it at once; until then, or until the
// snapshot is ready, smartClaim returns no claim and o says why.
func (r *Reconciler) smartClaim(ctx context.Context, dv *cdiv1.DataVolume, src dvspec.Source, want *corev1.PersistentVolumeClaim, class string, profile *cdiv1.StorageProfileStatus, o *Observed) (*corev1.PersistentVolumeClaim, error) {
	want = want.DeepCopy()
	setType := func(s cdiv1.CDICloneStrategy) {
		if want.Annotations == nil {
			want.Annotations = map[string]string{}
		}
		want.Annotations[dvspec.AnnCloneType] = string(s)
	}
	if src.Snapshot != nil {
		// A snapshot is restored by its driver; virtkit does not copy one.
		snap, blocked, err := r.sourceSnapshot(ctx, src)
		if err != nil || blocked != "" {
			o.Blocked, o.BlockedReason = blocked, ReasonCloneNoSource
			return nil, err
		}
		if blocked, err := r.foreignSnapshot(ctx, snap, class); err != nil || blocked != "" {
			o.Blocked, o.BlockedReason = blocked, dvspec.ReasonIncompatibleProvisioners
			return nil, err
		}
		setType(cdiv1.CloneStrategySnapshot)
		if src.CrossNamespace(dv.Namespace) {
			// Restored in its namespace, in the target's class.
			return r.transferClaim(ctx, dv, src, snapshot.VolumeSnapshotSource(snap.Name), want.Spec.StorageClassName, want, o)
		}
		restoreFrom(want, snap.Name)
		return want, nil
	}
	if profile == nil || profile.CloneStrategy == nil || *profile.CloneStrategy == cdiv1.CloneStrategyHostAssisted {
		// Copied: the claim may be made before its source is.
		setType(cdiv1.CloneStrategyHostAssisted)
		return want, nil
	}
	reason, msg, err := r.cloneBlocked(ctx, src, true)
	if err != nil || msg != "" {
		o.Blocked, o.BlockedReason = msg, reason
		return nil, err
	}
	source := &corev1.PersistentVolumeClaim{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: src.Claim.Namespace, Name: src.Claim.Name}, source); err != nil {
		return nil, fmt.Errorf("reading source claim %s/%s: %w", src.Claim.Namespace, src.Claim.Name, err)
	}
	f := dvspec.CloneFacts{Strategy: profile.CloneStrategy, SnapshotClass: ptr.Deref(profile.SnapshotClass, ""),
		Source: source, SourceClass: ptr.Deref(source.Spec.StorageClassName, ""), Target: want, TargetClass: class}
	target, err := r.class(ctx, class)
	if err != nil {
		return nil, err
	}
	if target != nil {
		f.TargetProvisioner = target.Provisioner
		f.AllowExpansion = ptr.Deref(target.AllowVolumeExpansion, false)
		f.BindsOnFirstConsumer = bindsOnFirstConsumer(target)
	}
	if f.BindsOnFirstConsumer {
		if f.HonorsFirstConsumer, err = r.honoursFirstConsumer(ctx, dv); err != nil {
			return nil, err
		}
	}
	if sc, err := r.class(ctx, f.SourceClass); err != nil {
		return nil, err
	} else if sc != nil {
		f.SourceProvisioner = sc.Provisioner
	}
	choice := dvspec.ChooseClone(f)
	if !choice.Smart() && dvspec.IsBlock(source) {
		// Copies are of file systems' disk.img only.
		reason, msg, err := r.cloneBlocked(ctx, src, false)
		o.Blocked, o.BlockedReason = msg, reason
		return nil, err
	}
	setType(choice.Strategy)
	if choice.FallbackReason != "" {
		r.recorder.Eventf(dv, corev1.EventTypeWarning, choice.FallbackReason, "%s", choice.FallbackMessage)
	}
	switch choice.Strategy {
	case cdiv1.CloneStrategyCsiClone:
		if src.CrossNamespace(dv.Namespace) {
			ds := corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: source.Name}
			return r.transferClaim(ctx, dv, src, ds, source.Spec.StorageClassName, want, o)
		}
		want.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: source.Name}
		want.Spec.DataSourceRef = &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: source.Name}
	case cdiv1.CloneStrategySnapshot:
		snap, err := r.cloneSnapshot(ctx, dv, source, f.SnapshotClass)
		if err != nil {
			return nil, err
		}
		if !snapshot.VolumeSnapshotReady(snap) {
			o.Preparing = cdiv1.SnapshotForSmartCloneInProgress
			if e := snap.Status; e != nil && e.Error != nil && e.Error.Message != nil {
				o.Blocked, o.BlockedReason = "snapshot "+snap.Name+": "+*e.Error.Message, ReasonSnapshotFailed
			}
			return nil, nil
		}
		restoreFrom(want, snap.Name)
	}
	return want, nil
}

// withCloneStrategy is profile with its clone strategy replaced by
// override, when set (the CDI resource's cloneStrategyOverride, which CDI
// puts over every profile's); profile itself is not changed.
func withCloneStrategy(profile *cdiv1.StorageProfileStatus, override *cdiv1.CDICloneStrategy) *cdiv1.StorageProfileStatus {
	if override == nil {
		return profile
	}
	p := &cdiv1.StorageProfileStatus{}
	if profile != nil {
		p = profile.DeepCopy()
	}
	p.CloneStrategy = ptr.To(*override)
	return p
}

// restoreFrom makes claim a restore of the VolumeSnapshot snap of its
// namespace.
func restoreFrom(claim *corev1.PersistentVolumeClaim, snap string) {
	ds := snapshot.VolumeSnapshotSource(snap)
	claim.Spec.DataSource = &ds
	claim.Spec.DataSourceRef = &corev1.TypedObjectReference{APIGroup: ds.APIGroup, Kind: ds.Kind, Name: ds.Name}
}

// sourceSnapshot is the VolumeSnapshot a snapshot source names, or why the
// DataVolume waits for it: missing, or not ready to use.
func (r *Reconciler) sourceSnapshot(ctx context.Context, src dvspec.Source) (*volumesnapshotv1.VolumeSnapshot, string, error) {
	key := client.ObjectKey{Namespace: src.Snapshot.Namespace, Name: src.Snapshot.Name}
	snap := &volumesnapshotv1.VolumeSnapshot{}
	switch err := r.client.Get(ctx, key, snap); {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil, fmt.Sprintf("source snapshot %s not found", key), nil
	case err != nil:
		return nil, "", fmt.Errorf("reading source snapshot %s: %w", key, err)
	case !snapshot.VolumeSnapshotReady(snap) || snap.Status.RestoreSize == nil:
		return nil, fmt.Sprintf("source snapshot %s is not ready to use", key), nil
	}
	return snap, "", nil
}

// foreignSnapshot says why snap cannot be restored into a claim of class:
// its driver (its VolumeSnapshotClass's) is not the class's provisioner;
// "" when it can, or when either is not known.
func (r *Reconciler) foreignSnapshot(ctx context.Context, snap *volumesnapshotv1.VolumeSnapshot, class string) (string, error) {
	target, err := r.class(ctx, class)
	if err != nil || target == nil || snap.Spec.VolumeSnapshotClassName == nil {
		return "", err
	}
	vsc := &volumesnapshotv1.VolumeSnapshotClass{}
	switch err := r.client.Get(ctx, client.ObjectKey{Name: *snap.Spec.VolumeSnapshotClassName}, vsc); {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading VolumeSnapshotClass %s: %w", *snap.Spec.VolumeSnapshotClassName, err)
	case vsc.Driver != target.Provisioner:
		return fmt.Sprintf("snapshot %s/%s of driver %s cannot be restored into StorageClass %s of provisioner %s: virtkit restores a snapshot only with its own driver",
			snap.Namespace, snap.Name, vsc.Driver, target.Name, target.Provisioner), nil
	}
	return "", nil
}

// cloneSnapshot is the VolumeSnapshot of source that a snapshot clone for
// dv makes its claim from, made if it does not exist yet and controlled by
// dv, so that it goes with dv.
func (r *Reconciler) cloneSnapshot(ctx context.Context, dv *cdiv1.DataVolume, source *corev1.PersistentVolumeClaim, class string) (*volumesnapshotv1.VolumeSnapshot, error) {
	key := client.ObjectKey{Namespace: source.Namespace, Name: dvspec.CloneSnapshotName(dv.UID)}
	snap := &volumesnapshotv1.VolumeSnapshot{}
	switch err := r.client.Get(ctx, key, snap); {
	case err == nil:
		return snap, nil
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading the clone's snapshot %s: %w", key, err)
	}
	snap = &volumesnapshotv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, OwnerReferences: []metav1.OwnerReference{dvspec.OwnerRef(dv)},
			Labels: map[string]string{dvspec.LabelApp: dvspec.AppCDI}},
		Spec: volumesnapshotv1.VolumeSnapshotSpec{Source: volumesnapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: &source.Name},
			VolumeSnapshotClassName: &class},
	}
	if err := r.client.Create(ctx, snap); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating the clone's snapshot %s: %w", key, err)
	}
	return snap, nil
}

// smartCloneDone marks a smart clone's bound claim filled and deletes the
// snapshot it was made from, if any.
func (r *Reconciler) smartCloneDone(ctx context.Context, dv *cdiv1.DataVolume, claim *corev1.PersistentVolumeClaim) error {
	if ds := claim.Spec.DataSource; snapshot.RestoresVolumeSnapshot(ds) && ds.Name == dvspec.CloneSnapshotName(dv.UID) {
		// A snapshot clone's own snapshot; a snapshot source is the user's.
		snap := &volumesnapshotv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: claim.Namespace, Name: dvspec.CloneSnapshotName(dv.UID)}}
		if err := r.client.Delete(ctx, snap); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the clone's snapshot %s/%s: %w", snap.Namespace, snap.Name, err)
		}
	}
	return r.annotateClaim(ctx, claim, map[string]string{dvspec.AnnPopulatedFor: dv.Name})
}

// smartStrategy is how claim is filled when the storage fills it (a CSI
// or snapshot clone), "" otherwise.
func smartStrategy(claim *corev1.PersistentVolumeClaim) cdiv1.CDICloneStrategy {
	if claim == nil {
		return ""
	}
	switch s := cdiv1.CDICloneStrategy(claim.Annotations[dvspec.AnnCloneType]); s {
	case cdiv1.CloneStrategyCsiClone, cdiv1.CloneStrategySnapshot:
		return s
	}
	return ""
}
