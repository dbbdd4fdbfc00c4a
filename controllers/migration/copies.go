package migration

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/migrate"
)

// Reasons of the events about the claims a migration copies.
const (
	ReasonCopiesCreated = "ClaimsCopying"
	ReasonCopiesKept    = "ClaimsCopied"
	ReasonCopiesDropped = "ClaimsCopyAbandoned"
)

// copies lists the claims mig made as copies.
func (r *Reconciler) copies(ctx context.Context, mig *virtv1.VirtualMachineInstanceMigration) ([]corev1.PersistentVolumeClaim, error) {
	var list corev1.PersistentVolumeClaimList
	if err := r.reader.List(ctx, &list, client.InNamespace(mig.Namespace), client.MatchingLabels{migrate.CopyForLabel: string(mig.UID)}); err != nil {
		return nil, fmt.Errorf("migration %s/%s: listing the claims it copies into: %w", mig.Namespace, mig.Name, err)
	}
	return list.Items, nil
}

// copyClaims creates a copy of the claim of each of volumes (unless it
// exists), then points the VMI at the copies: status.migratedVolumes
// first, which virt-api requires before the spec may name them, then
// spec.volumes.
func (r *Reconciler) copyClaims(ctx context.Context, mig *virtv1.VirtualMachineInstanceMigration, v *virtv1.VirtualMachineInstance, volumes []string) error {
	byName := map[string]string{}
	for i := range v.Spec.Volumes {
		byName[v.Spec.Volumes[i].Name] = migrate.ClaimOf(&v.Spec.Volumes[i])
	}
	claims := map[string]*corev1.PersistentVolumeClaim{}
	copies := map[string]*corev1.PersistentVolumeClaim{}
	for _, vol := range volumes {
		name := byName[vol]
		src := &corev1.PersistentVolumeClaim{}
		if err := r.reader.Get(ctx, client.ObjectKey{Namespace: v.Namespace, Name: name}, src); err != nil {
			return fmt.Errorf("migration %s/%s: the claim %s of volume %q: %w", mig.Namespace, mig.Name, name, vol, err)
		}
		cp := migrate.CopyClaim(src, mig)
		if err := r.client.Create(ctx, cp); apierrors.IsAlreadyExists(err) {
			if err := r.reader.Get(ctx, client.ObjectKeyFromObject(cp), cp); err != nil {
				return fmt.Errorf("migration %s/%s: the copy %s: %w", mig.Namespace, mig.Name, cp.Name, err)
			}
			if cp.Labels[migrate.CopyForLabel] != string(mig.UID) {
				return fmt.Errorf("migration %s/%s: a claim %s exists and is not this migration's copy of %s", mig.Namespace, mig.Name, cp.Name, name)
			}
		} else if err != nil {
			return fmt.Errorf("migration %s/%s: creating the copy %s of claim %s: %w", mig.Namespace, mig.Name, cp.Name, name, err)
		}
		claims[name], copies[name] = src, cp
	}
	migrated, vols := migrate.CopiedVolumes(v, volumes, claims, copies)
	if err := r.setMigratedVolumes(ctx, v, migrated); err != nil {
		return err
	}
	if err := r.setVolumes(ctx, v, vols); err != nil {
		return err
	}
	r.recorder.Eventf(mig, corev1.EventTypeNormal, ReasonCopiesCreated, "Copying %d ReadWriteOnce claim(s) of %s to the target node", len(volumes), v.Name)
	return nil
}

// keepCopies points the VM of the migrated VMI at the copies its claims
// were copied into, then drops the copies' marks and owner: they are the
// VM's claims now. The claims they copy are left as they are.
func (r *Reconciler) keepCopies(ctx context.Context, mig *virtv1.VirtualMachineInstanceMigration, v *virtv1.VirtualMachineInstance, copies []corev1.PersistentVolumeClaim) error {
	to := map[string]string{}
	for _, c := range copies {
		to[c.Annotations[migrate.CopyOfAnnotation]] = c.Name
	}
	if v != nil {
		if err := r.pointVM(ctx, v, to); err != nil {
			return err
		}
	}
	for i := range copies {
		c := copies[i].DeepCopy()
		delete(c.Labels, migrate.CopyForLabel)
		delete(c.Annotations, migrate.CopyOfAnnotation)
		var owners []metav1.OwnerReference
		for _, o := range c.OwnerReferences {
			if o.UID != mig.UID {
				owners = append(owners, o)
			}
		}
		c.OwnerReferences = owners
		if err := r.client.Update(ctx, c); err != nil {
			return fmt.Errorf("migration %s/%s: keeping the copy %s: %w", mig.Namespace, mig.Name, c.Name, err)
		}
	}
	r.recorder.Eventf(mig, corev1.EventTypeNormal, ReasonCopiesKept, "%s now uses the copies of its claims; the claims copied are left as they were", mig.Spec.VMIName)
	return nil
}

// pointVM renames the claims of the template of the VM controlling v as to
// says (old name: copy).
func (r *Reconciler) pointVM(ctx context.Context, v *virtv1.VirtualMachineInstance, to map[string]string) error {
	owner := metav1.GetControllerOf(v)
	if owner == nil || owner.Kind != "VirtualMachine" {
		return nil
	}
	vm := &virtv1.VirtualMachine{}
	if err := r.reader.Get(ctx, client.ObjectKey{Namespace: v.Namespace, Name: owner.Name}, vm); err != nil {
		return client.IgnoreNotFound(err)
	}
	if vm.UID != owner.UID || vm.Spec.Template == nil {
		return nil
	}
	vols, changed := migrate.RenamedClaims(vm.Spec.Template.Spec.Volumes, to)
	if !changed {
		return nil
	}
	vm.Spec.Template.Spec.Volumes = vols
	if err := r.client.Update(ctx, vm); err != nil {
		return fmt.Errorf("VirtualMachine %s/%s: naming the copies of its claims: %w", vm.Namespace, vm.Name, err)
	}
	return nil
}

// dropCopies undoes a failed migration's copying: the VMI names its own
// claims again (while its migratedVolumes still lists them, as virt-api
// requires), its migratedVolumes are cleared, and the copies deleted.
func (r *Reconciler) dropCopies(ctx context.Context, mig *virtv1.VirtualMachineInstanceMigration, v *virtv1.VirtualMachineInstance, copies []corev1.PersistentVolumeClaim) error {
	if v != nil && copiesIn(v, mig) {
		back := map[string]string{}
		for _, m := range v.Status.MigratedVolumes {
			if m.SourcePVCInfo != nil && m.DestinationPVCInfo != nil {
				back[m.DestinationPVCInfo.ClaimName] = m.SourcePVCInfo.ClaimName
			}
		}
		vols, _ := migrate.RenamedClaims(v.Spec.Volumes, back)
		if err := r.setVolumes(ctx, v, vols); err != nil {
			return err
		}
		if err := r.setMigratedVolumes(ctx, v, nil); err != nil {
			return err
		}
	}
	var errs []error
	for i := range copies {
		c := &copies[i]
		if c.DeletionTimestamp != nil {
			continue
		}
		if err := r.client.Delete(ctx, c, client.Preconditions{UID: &c.UID}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("migration %s/%s: deleting the copy %s: %w", mig.Namespace, mig.Name, c.Name, err))
		}
	}
	if len(copies) > 0 && len(errs) == 0 {
		r.recorder.Eventf(mig, corev1.EventTypeNormal, ReasonCopiesDropped, "Deleted the %d unfinished copies of %s's claims; it goes on on its own", len(copies), mig.Spec.VMIName)
	}
	return errors.Join(errs...)
}

// setMigratedVolumes writes v's status.migratedVolumes (a merge patch
// guarded by its resourceVersion) and updates v.
func (r *Reconciler) setMigratedVolumes(ctx context.Context, v *virtv1.VirtualMachineInstance, migrated []virtv1.StorageMigratedVolumeInfo) error {
	if equality.Semantic.DeepEqual(v.Status.MigratedVolumes, migrated) {
		return nil
	}
	upd := v.DeepCopy()
	upd.Status.MigratedVolumes = migrated
	if err := r.client.Status().Patch(ctx, upd, client.MergeFromWithOptions(v, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("VirtualMachineInstance %s/%s: status.migratedVolumes: %w", v.Namespace, v.Name, err)
	}
	r.vmis.Replaced(client.ObjectKeyFromObject(v), v.ResourceVersion, upd.ResourceVersion)
	*v = *upd
	return nil
}

// setVolumes writes v's spec.volumes, guarded by its resourceVersion.
func (r *Reconciler) setVolumes(ctx context.Context, v *virtv1.VirtualMachineInstance, vols []virtv1.Volume) error {
	if equality.Semantic.DeepEqual(v.Spec.Volumes, vols) {
		return nil
	}
	upd := v.DeepCopy()
	upd.Spec.Volumes = vols
	if err := r.client.Update(ctx, upd); err != nil {
		return fmt.Errorf("VirtualMachineInstance %s/%s: spec.volumes: %w", v.Namespace, v.Name, err)
	}
	r.vmis.Replaced(client.ObjectKeyFromObject(v), v.ResourceVersion, upd.ResourceVersion)
	*v = *upd
	return nil
}
