package migration

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/virt/storage/backendstorage"
)

// stateClaim is the backend-storage claim made for mig's target
// (backendstorage.FindMigration), nil when there is none. It reads the
// API, not the cache, as the VMI controller does for its claims.
func (r *Reconciler) stateClaim(ctx context.Context, mig *virtv1.VirtualMachineInstanceMigration) (*corev1.PersistentVolumeClaim, error) {
	var list corev1.PersistentVolumeClaimList
	if err := r.reader.List(ctx, &list, client.InNamespace(mig.Namespace), client.MatchingLabels{backendstorage.LabelMigration: mig.Name}); err != nil {
		return nil, fmt.Errorf("migration %s/%s: listing its backend-storage claim: %w", mig.Namespace, mig.Name, err)
	}
	return backendstorage.FindMigration(list.Items, mig.Name), nil
}

// targetStateClaim is the name of the backend-storage claim the target
// pod of mig mounts, made now if there is none: a claim of its own, in the
// class and access mode a new claim of the VMI gets now (so a changed
// vmStateStorageClass moves the state on the next migration, as in
// KubeVirt). The guest's EFI variables and vTPM state reach it in QEMU's
// migration stream.
func (r *Reconciler) targetStateClaim(ctx context.Context, mig *virtv1.VirtualMachineInstanceMigration, v *virtv1.VirtualMachineInstance, opts vmi.PodOptions) (string, error) {
	switch have, err := r.stateClaim(ctx, mig); {
	case err != nil:
		return "", err
	case have != nil:
		return have.Name, nil
	}
	c, err := vmi.NewStateClaim(ctx, r.reader, v, opts.StateStorageClass)
	if err != nil {
		return "", fmt.Errorf("migration %s/%s: %w", mig.Namespace, mig.Name, err)
	}
	backendstorage.ForMigration(c, mig.Name)
	if err := r.client.Create(ctx, c); err != nil {
		return "", fmt.Errorf("migration %s/%s: creating the target's backend-storage claim: %w", mig.Namespace, mig.Name, err)
	}
	r.recorder.Eventf(mig, corev1.EventTypeNormal, vmi.ReasonBackendStorageCreated, "Created backend-storage claim %s for the target", c.Name)
	logf.FromContext(ctx).Info("target backend-storage claim created", "claim", c.Name)
	return c.Name, nil
}

// handOffState makes the target's claim of mig, which succeeded, the
// VM's (backendstorage.Handoff) and deletes the claim the source used, as
// KubeVirt's controller does: the label first, so that the VM has a claim
// at every moment. Both steps can be taken again.
func (r *Reconciler) handOffState(ctx context.Context, mig *virtv1.VirtualMachineInstanceMigration, target *corev1.PersistentVolumeClaim) error {
	ms := mig.Status.MigrationState
	if target != nil {
		labels, err := backendstorage.Handoff(target, mig.Spec.VMIName)
		if err != nil {
			return fmt.Errorf("migration %s/%s: %w", mig.Namespace, mig.Name, err)
		}
		upd := target.DeepCopy()
		upd.Labels = labels
		if err := r.client.Patch(ctx, upd, client.MergeFromWithOptions(target, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("migration %s/%s: labelling backend-storage claim %s for VM %s: %w", mig.Namespace, mig.Name, target.Name, mig.Spec.VMIName, err)
		}
	}
	if ms == nil || ms.SourcePersistentStatePVCName == "" || ms.SourcePersistentStatePVCName == ms.TargetPersistentStatePVCName {
		return nil
	}
	src := &corev1.PersistentVolumeClaim{}
	src.Namespace, src.Name = mig.Namespace, ms.SourcePersistentStatePVCName
	switch err := r.client.Delete(ctx, src); {
	case apierrors.IsNotFound(err):
		return nil // gone in an earlier pass
	case err != nil:
		return fmt.Errorf("migration %s/%s: deleting the source's backend-storage claim %s: %w", mig.Namespace, mig.Name, src.Name, err)
	}
	r.recorder.Eventf(mig, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted backend-storage claim %s, which the source used", src.Name)
	return nil
}

// dropState deletes target, the claim made for the target of mig, which
// failed: the VM keeps its claim.
func (r *Reconciler) dropState(ctx context.Context, mig *virtv1.VirtualMachineInstanceMigration, target *corev1.PersistentVolumeClaim) error {
	if err := r.client.Delete(ctx, target, client.Preconditions{UID: &target.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("migration %s/%s: deleting the target's backend-storage claim %s: %w", mig.Namespace, mig.Name, target.Name, err)
	}
	r.recorder.Eventf(mig, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted backend-storage claim %s, made for the target", target.Name)
	return nil
}
