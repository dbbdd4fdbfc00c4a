package vm

import (
	"context"
	"fmt"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/virt/migrate"
)

// Reasons and messages of a volume update, as KubeVirt's VM controller
// writes them.
const (
	// ReasonVolumesUpdateError is the Failure condition's reason when the
	// VM's volumes cannot be handled (changed again during a volume
	// migration, to claims it did not start from).
	ReasonVolumesUpdateError = "VolumesUpdateError"
	// MessageMigrateVolumes is the VolumesChange condition's message while
	// the VMI's volumes wait for their migration.
	MessageMigrateVolumes = "migrate volumes"
	// ReasonManualRecovery is the reason of ManualRecoveryRequired: the
	// VMI ended during a volume migration, and which claims hold the
	// guest's latest writes is for the user to say.
	ReasonManualRecovery = "VMI was removed or was final during the volume migration"
)

// missingClaimRetry is how soon a volume update whose destination claim does
// not exist yet looks again (claims are not watched).
const missingClaimRetry = 5 * time.Second

// syncVolumeUpdate carries out updateVolumesStrategy: Migration for a
// running VMI whose VM now names other claims, as KubeVirt does: the VMI's
// status.migratedVolumes and VolumesChange condition first, then its
// spec.volumes (the workload updater then migrates it, copying the disks
// into the new claims); or, when the VM went back to the source claims
// before the migration ended, the VMI's volumes back and the migration
// called off. It records the migration in vm's status (vm is the work
// copy). A change that no migration can make sets RestartRequired.
func (r *Reconciler) syncVolumeUpdate(ctx context.Context, vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) (time.Duration, *SyncError) {
	if vmi == nil || vm.Spec.Template == nil {
		return 0, nil
	}
	var claims map[string]*k8sv1.PersistentVolumeClaim
	strategy := vm.Spec.UpdateVolumesStrategy
	switch {
	case len(migrate.ChangedClaims(vm.Spec.Template.Spec.Volumes, vmi.Spec.Volumes)) == 0:
		if !vmi.IsFinal() {
			conditions.VM().Remove(&vm.Status.Conditions, virtv1.VirtualMachineRestartRequired)
		}
		if len(vmi.Status.MigratedVolumes) == 0 {
			return 0, nil
		}
	case strategy == nil || *strategy != virtv1.UpdateVolumesStrategyMigration:
		// Only a cancellation is possible, which needs no claim: a
		// template changed under Replacement waits for a restart without
		// a read of its claims at each reconcile.
		if len(vmi.Status.MigratedVolumes) == 0 {
			return 0, nil
		}
	default:
		var err error
		if claims, err = r.claimsOf(ctx, vm, vmi); err != nil {
			return 0, &SyncError{Reason: ReasonVolumesUpdateError, Err: err}
		}
	}
	plan, err := migrate.PlanVolumeUpdate(vm, vmi, claims)
	if err != nil {
		return 0, &SyncError{Reason: ReasonVolumesUpdateError, Terminal: true,
			Err: fmt.Errorf("error encountered while handling volumes update requests: %w", err)}
	}
	now := metav1.NewTime(r.clock.Now().Truncate(time.Second))
	switch {
	case len(plan.Refused) > 0:
		conditions.VM().Set(&vm.Status.Conditions, virtv1.VirtualMachineCondition{Type: virtv1.VirtualMachineRestartRequired,
			Status: k8sv1.ConditionTrue, Message: plan.Refused.ToAggregate().Error()}, now)
	case plan.Missing != "":
		err := r.setVolumesChange(ctx, vmi, func(st *virtv1.VirtualMachineInstanceStatus) {
			conditions.VMI().Set(&st.Conditions, virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceVolumesChange,
				Status: k8sv1.ConditionFalse, Message: fmt.Sprintf("One of the destination volumes doesn't exist: persistentvolumeclaim %q not found", plan.Missing)}, now)
		})
		if err != nil {
			return 0, &SyncError{Reason: ReasonVolumesUpdateError, Err: err}
		}
		return missingClaimRetry, nil
	case plan.Start:
		// The list first: the admission lets the spec name the new claims
		// only once the VMI's migratedVolumes lists them. The condition
		// that asks for the migration last, once the spec names them.
		err := r.setVolumesChange(ctx, vmi, func(st *virtv1.VirtualMachineInstanceStatus) { st.MigratedVolumes = plan.Migrated })
		if err == nil {
			err = r.setVMIVolumes(ctx, vmi, plan.Volumes)
		}
		if err == nil {
			err = r.setVolumesChange(ctx, vmi, func(st *virtv1.VirtualMachineInstanceStatus) {
				conditions.VMI().Set(&st.Conditions, virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceVolumesChange,
					Status: k8sv1.ConditionTrue, Message: MessageMigrateVolumes}, now)
			})
		}
		if err != nil {
			return 0, &SyncError{Reason: ReasonVolumesUpdateError, Err: err}
		}
		conditions.VM().Remove(&vm.Status.Conditions, virtv1.VirtualMachineRestartRequired)
		vm.Status.VolumeUpdateState = &virtv1.VolumeUpdateState{VolumeMigrationState: &virtv1.VolumeMigrationState{MigratedVolumes: plan.Migrated}}
		r.recorder.Eventf(vm, k8sv1.EventTypeNormal, ReasonVolumesUpdate, "Migrating %d volume(s) of virtual machine instance %s to new claims", len(plan.Migrated), vmi.Name)
	case plan.Cancel:
		// The spec first, while migratedVolumes still names the claims
		// it goes back to.
		err := r.setVMIVolumes(ctx, vmi, plan.Volumes)
		if err == nil {
			err = r.setVolumesChange(ctx, vmi, func(st *virtv1.VirtualMachineInstanceStatus) {
				st.MigratedVolumes = nil
				conditions.VMI().Set(&st.Conditions, virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceVolumesChange,
					Status: k8sv1.ConditionFalse, Reason: virtv1.VirtualMachineInstanceReasonVolumesChangeCancellation}, now)
			})
		}
		if err != nil {
			return 0, &SyncError{Reason: ReasonVolumesUpdateError, Err: err}
		}
		r.recorder.Eventf(vm, k8sv1.EventTypeNormal, ReasonVolumesUpdate, "Cancelled the volume migration of virtual machine instance %s", vmi.Name)
	}
	return 0, nil
}

// ReasonVolumesUpdate is the reason of the events of a volume update.
const ReasonVolumesUpdate = "VolumesUpdate"

// claimsOf reads the claims vm's template and vmi name (uncached: a volume
// update is rare, and the claims need not be watched for it).
func (r *Reconciler) claimsOf(ctx context.Context, vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) (map[string]*k8sv1.PersistentVolumeClaim, error) {
	out := map[string]*k8sv1.PersistentVolumeClaim{}
	for _, vols := range [][]virtv1.Volume{vm.Spec.Template.Spec.Volumes, vmi.Spec.Volumes} {
		for i := range vols {
			name := migrate.ClaimOf(&vols[i])
			if _, done := out[name]; name == "" || done {
				continue
			}
			pvc := &k8sv1.PersistentVolumeClaim{}
			err := r.reader.Get(ctx, client.ObjectKey{Namespace: vm.Namespace, Name: name}, pvc)
			switch {
			case apierrors.IsNotFound(err):
				out[name] = nil
			case err != nil:
				return nil, fmt.Errorf("reading PersistentVolumeClaim %s/%s of volume %q: %w", vm.Namespace, name, vols[i].Name, err)
			default:
				out[name] = pvc
			}
		}
	}
	for name, pvc := range out {
		if pvc == nil {
			delete(out, name)
		}
	}
	return out, nil
}

// setVolumesChange updates vmi's status with edit, guarded by its
// resourceVersion.
func (r *Reconciler) setVolumesChange(ctx context.Context, vmi *virtv1.VirtualMachineInstance, edit func(*virtv1.VirtualMachineInstanceStatus)) error {
	upd := vmi.DeepCopy()
	edit(&upd.Status)
	if equality.Semantic.DeepEqual(upd.Status, vmi.Status) {
		return nil
	}
	if err := r.client.Status().Update(ctx, upd); err != nil {
		return fmt.Errorf("updating the volume migration in the status of VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	vmi.ResourceVersion, vmi.Status = upd.ResourceVersion, upd.Status
	return nil
}

// setVMIVolumes updates vmi's spec.volumes, guarded by its resourceVersion.
func (r *Reconciler) setVMIVolumes(ctx context.Context, vmi *virtv1.VirtualMachineInstance, vols []virtv1.Volume) error {
	if equality.Semantic.DeepEqual(vols, vmi.Spec.Volumes) {
		return nil
	}
	upd := vmi.DeepCopy()
	upd.Spec.Volumes = vols
	if err := r.client.Update(ctx, upd); err != nil {
		return fmt.Errorf("updating spec.volumes of VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	vmi.ResourceVersion, vmi.Spec.Volumes = upd.ResourceVersion, upd.Spec.Volumes
	return nil
}

// volumeMigrationStatus brings st's volumeUpdateState and the conditions of
// a volume migration in line with the VM and its VMI, as KubeVirt's
// syncVolumeMigration does: the VMI's VolumesChange condition is mirrored;
// the record of a migration is dropped when the VM went back to the source
// claims, left the Migration strategy, or the migration was cancelled; a
// VMI that ended during a migration makes the VM ManualRecoveryRequired.
func volumeMigrationStatus(st *virtv1.VirtualMachineStatus, vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance, now metav1.Time) {
	var verbatim metav1.Time
	volumesChange := virtv1.VirtualMachineConditionType(virtv1.VirtualMachineInstanceVolumesChange)
	if vmi != nil && !vmi.IsFinal() {
		if c := vmiCondition(vmi, virtv1.VirtualMachineInstanceVolumesChange); c != nil {
			conditions.VM().Set(&st.Conditions, virtv1.VirtualMachineCondition{Type: volumesChange, Status: c.Status,
				Reason: c.Reason, Message: c.Message, LastProbeTime: c.LastProbeTime, LastTransitionTime: c.LastTransitionTime}, verbatim)
		} else {
			conditions.VM().Remove(&st.Conditions, volumesChange)
		}
	}
	us := st.VolumeUpdateState
	if us == nil || us.VolumeMigrationState == nil {
		return
	}
	sources := map[string]string{}
	for _, m := range us.VolumeMigrationState.MigratedVolumes {
		if m.SourcePVCInfo != nil {
			sources[m.VolumeName] = m.SourcePVCInfo.ClaimName
		}
	}
	reverted := true
	if vm.Spec.Template != nil {
		for i, v := range vm.Spec.Template.Spec.Volumes {
			if src, ok := sources[v.Name]; ok && src != migrate.ClaimOf(&vm.Spec.Template.Spec.Volumes[i]) {
				reverted = false
			}
		}
	}
	strategy := vm.Spec.UpdateVolumesStrategy
	if reverted || strategy == nil || *strategy != virtv1.UpdateVolumesStrategyMigration {
		us.VolumeMigrationState = nil
		conditions.VM().Remove(&st.Conditions, volumesChange)
		conditions.VM().Remove(&st.Conditions, virtv1.VirtualMachineManualRecoveryRequired)
		return
	}
	if vmi == nil || vmi.IsFinal() {
		if c := conditions.VM().Find(st.Conditions, volumesChange); c != nil && c.Status == k8sv1.ConditionTrue {
			conditions.VM().Set(&st.Conditions, virtv1.VirtualMachineCondition{Type: virtv1.VirtualMachineManualRecoveryRequired,
				Status: k8sv1.ConditionTrue, Reason: ReasonManualRecovery}, now)
		}
		return
	}
	if c := vmiCondition(vmi, virtv1.VirtualMachineInstanceVolumesChange); c != nil && c.Status == k8sv1.ConditionFalse &&
		c.Reason == virtv1.VirtualMachineInstanceReasonVolumesChangeCancellation {
		us.VolumeMigrationState = nil
	}
}
