package snapshot

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/controllers/events"
	"github.com/virtkit/virtkit/virt/clone"
	"github.com/virtkit/virtkit/virt/storage/backendstorage"
	"github.com/virtkit/virtkit/virt/storage/dvspec"
	"github.com/virtkit/virtkit/virt/storage/snapshot"
)

// Events on restores, with KubeVirt's reasons.
const (
	ReasonRestoreComplete = "VirtualMachineRestoreComplete"
	ReasonRestoreError    = "VirtualMachineRestoreError"
	// ReasonClaimReplaced: a claim restored in place was deleted first.
	ReasonClaimReplaced = "RestoreClaimReplaced"
	// ReasonStateReplaced: the VM's backend-storage claim was deleted for
	// the one restored from the snapshot.
	ReasonStateReplaced = "RestoreBackendStorageReplaced"
)

// RestoreReconciler is the VirtualMachineRestore controller.
type RestoreReconciler struct{ base }

// NewRestoreReconciler returns a restore reconciler with opts applied.
func NewRestoreReconciler(opts ...Option) *RestoreReconciler {
	return &RestoreReconciler{newBase(opts)}
}

// SetupWithManager registers the reconciler with mgr: it watches
// restores, and the claims and VMs they make.
func (r *RestoreReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.client == nil {
		r.client = mgr.GetClient()
	}
	r.recorder = events.OrManager(r.recorder, mgr, "virt-controller")
	return ctrl.NewControllerManagedBy(mgr).
		Named("virtualmachinerestore").
		For(&vmsnapshotv1.VirtualMachineRestore{}).
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(restoreOfClaim)).
		Watches(&virtv1.VirtualMachine{}, handler.EnqueueRequestsFromMapFunc(restoreOfVM)).
		Complete(r)
}

func restoreOfClaim(_ context.Context, obj client.Object) []reconcile.Request {
	if name := obj.GetAnnotations()[snapshot.RestoreNameAnnotation]; name != "" {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
	}
	return nil
}

func restoreOfVM(_ context.Context, obj client.Object) []reconcile.Request {
	vm, ok := obj.(*virtv1.VirtualMachine)
	if !ok || vm.Status.RestoreInProgress == nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: vm.Namespace, Name: *vm.Status.RestoreInProgress}}}
}

// Reconcile takes a restore one step further and writes its status.
func (r *RestoreReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rs := &vmsnapshotv1.VirtualMachineRestore{}
	if err := r.client.Get(ctx, req.NamespacedName, rs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	target, err := r.target(ctx, rs)
	if err != nil {
		return ctrl.Result{}, err
	}
	if rs.DeletionTimestamp != nil {
		if err := r.releaseTarget(ctx, target, rs.Name); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.dropClaims(ctx, rs); err != nil {
			return ctrl.Result{}, err
		}
		if controllerutil.RemoveFinalizer(rs, snapshot.RestoreFinalizer) {
			return ctrl.Result{}, client.IgnoreNotFound(r.client.Update(ctx, rs))
		}
		return ctrl.Result{}, nil
	}
	next := rs.DeepCopy()
	if next.Status == nil {
		next.Status = &vmsnapshotv1.VirtualMachineRestoreStatus{Complete: ptr.To(false)}
	}
	if ptr.Deref(next.Status.Complete, false) || hasTrue(next.Status.Conditions, vmsnapshotv1.ConditionFailure) {
		return ctrl.Result{}, r.releaseTarget(ctx, target, rs.Name)
	}
	if !controllerutil.ContainsFinalizer(rs, snapshot.RestoreFinalizer) {
		controllerutil.AddFinalizer(rs, snapshot.RestoreFinalizer)
		if err := r.client.Update(ctx, rs); err != nil {
			return ctrl.Result{}, err
		}
		next.ResourceVersion = rs.ResourceVersion
		next.Finalizers = rs.Finalizers
	}
	now := metav1.NewTime(r.clock.Now().Truncate(time.Second))
	st := next.Status
	wait, err := r.step(ctx, rs, next, target, now)
	var fail *failure
	retry := time.Duration(0)
	switch {
	case errors.As(err, &fail):
		st.Conditions = snapshot.SetCondition(st.Conditions, snapshot.Condition(vmsnapshotv1.ConditionFailure, corev1.ConditionTrue, fail.Error(), now))
		st.Conditions = snapshot.SetCondition(st.Conditions, snapshot.Condition(vmsnapshotv1.ConditionProgressing, corev1.ConditionFalse, "Operation failed", now))
		st.Conditions = snapshot.SetCondition(st.Conditions, snapshot.Condition(vmsnapshotv1.ConditionReady, corev1.ConditionFalse, "Operation failed", now))
		r.recorder.Eventf(rs, corev1.EventTypeWarning, ReasonRestoreError, "%s", fail.Error())
		if err := r.releaseTarget(ctx, target, rs.Name); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.dropClaims(ctx, rs); err != nil {
			return ctrl.Result{}, err
		}
	case err != nil:
		return ctrl.Result{}, err
	case wait != "":
		retry = retryInterval
		st.Conditions = snapshot.SetCondition(st.Conditions, snapshot.Condition(vmsnapshotv1.ConditionProgressing, corev1.ConditionTrue, wait, now))
		st.Conditions = snapshot.SetCondition(st.Conditions, snapshot.Condition(vmsnapshotv1.ConditionReady, corev1.ConditionFalse, wait, now))
	default:
		st.Complete, st.RestoreTime = ptr.To(true), &now
		st.Conditions = snapshot.SetCondition(st.Conditions, snapshot.Condition(vmsnapshotv1.ConditionProgressing, corev1.ConditionFalse, "Operation complete", now))
		st.Conditions = snapshot.SetCondition(st.Conditions, snapshot.Condition(vmsnapshotv1.ConditionReady, corev1.ConditionTrue, "Operation complete", now))
		r.recorder.Eventf(rs, corev1.EventTypeNormal, ReasonRestoreComplete, "Successfully completed VirtualMachineRestore %s", rs.Name)
	}
	if !equality.Semantic.DeepEqual(rs.Status, next.Status) {
		if err := r.client.Status().Update(ctx, next); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: retry}, nil
}

func hasTrue(conds []vmsnapshotv1.Condition, t vmsnapshotv1.ConditionType) bool {
	for _, c := range conds {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// step does what the restore needs next, writing next's status: it
// returns why it waits ("" once the target is written), or a *failure.
func (r *RestoreReconciler) step(ctx context.Context, rs, next *vmsnapshotv1.VirtualMachineRestore, target *virtv1.VirtualMachine, now metav1.Time) (string, error) {
	if rs.Spec.Target.Kind != "VirtualMachine" {
		return "", failed("spec.target.kind: %q is not supported (only VirtualMachine)", rs.Spec.Target.Kind)
	}
	s := &vmsnapshotv1.VirtualMachineSnapshot{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: rs.Namespace, Name: rs.Spec.VirtualMachineSnapshotName}, s); apierrors.IsNotFound(err) {
		return "", failed("spec.virtualMachineSnapshotName: VirtualMachineSnapshot %q does not exist", rs.Spec.VirtualMachineSnapshotName)
	} else if err != nil {
		return "", err
	}
	if !snapshot.Ready(s) {
		if s.Status != nil && s.Status.Phase == vmsnapshotv1.Failed {
			return "", failed("VirtualMachineSnapshot %q failed", s.Name)
		}
		return fmt.Sprintf("Waiting for VirtualMachineSnapshot %q to be ready", s.Name), nil
	}
	content := &vmsnapshotv1.VirtualMachineSnapshotContent{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: rs.Namespace, Name: *s.Status.VirtualMachineSnapshotContentName}, content); err != nil {
		return "", fmt.Errorf("VirtualMachineSnapshotContent %s: %w", *s.Status.VirtualMachineSnapshotContentName, err)
	}
	if target != nil {
		if why, err := r.holdTarget(ctx, rs, target); err != nil || why != "" {
			return why, err
		}
	}
	var opts []snapshot.RestoreOption
	if clone.OwnerOf(rs) != "" {
		// A clone starts with fresh EFI variables and vTPM: it is
		// another machine (KubeVirt refuses to clone such VMs).
		opts = append(opts, snapshot.WithoutBackendStorage())
	}
	plan, err := snapshot.PlanRestore(rs, content, target, opts...)
	if err != nil {
		return "", failed("%v", err)
	}
	next.Status.Restores = plan.Restores
	// The claims first: each from its VolumeSnapshot.
	pending := 0
	for _, pvc := range plan.Claims {
		have := &corev1.PersistentVolumeClaim{}
		err := r.client.Get(ctx, client.ObjectKeyFromObject(pvc), have)
		switch {
		case apierrors.IsNotFound(err):
			if err := r.toDataVolume(ctx, pvc); err != nil {
				return "", err
			}
			if err := r.client.Create(ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) {
				return "", fmt.Errorf("creating claim %s: %w", pvc.Name, err)
			}
			pending++
			continue
		case err != nil:
			return "", err
		case have.Annotations[snapshot.RestoreNameAnnotation] != rs.Name && snapshot.IsInPlace(rs):
			// In place: the claim of that name goes first (its VM is
			// stopped), as KubeVirt replaces it.
			if have.DeletionTimestamp == nil {
				if err := r.client.Delete(ctx, have, client.Preconditions{UID: &have.UID}); client.IgnoreNotFound(err) != nil {
					return "", fmt.Errorf("deleting claim %s to restore it in place: %w", have.Name, err)
				}
				r.recorder.Eventf(rs, corev1.EventTypeNormal, ReasonClaimReplaced, "Deleted claim %s to restore it in place", have.Name)
			}
			pending++
			continue
		case have.Annotations[snapshot.RestoreNameAnnotation] != rs.Name:
			return "", failed("claim %q exists and is not this restore's: name the volume's claim with a volumeRestoreOverride, or restore in place (volumeRestorePolicy: InPlace)", pvc.Name)
		case have.Status.Phase != corev1.ClaimBound:
			pending++
		}
	}
	if pending > 0 {
		return fmt.Sprintf("Waiting for %d restored claims to be bound", pending), nil
	}
	// Then the VM, pointed at them.
	vm := plan.VM
	if target == nil {
		if err := r.client.Create(ctx, vm); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", failed("creating VirtualMachine %s: %v", vm.Name, err)
		}
		if err := r.client.Get(ctx, client.ObjectKeyFromObject(vm), vm); err != nil {
			return "", err
		}
	} else if target.Annotations[snapshot.LastRestoreAnnotation] != string(rs.UID) {
		if err := r.client.Update(ctx, vm); err != nil {
			return "", fmt.Errorf("writing VirtualMachine %s: %w", vm.Name, err)
		}
	} else {
		vm = target
	}
	// The VM owns its restored claims (volumeOwnershipPolicy Vm, the
	// default): they go with it.
	if p := rs.Spec.VolumeOwnershipPolicy; p == nil || *p == vmsnapshotv1.VolumeOwnershipPolicyVm {
		for _, pvc := range plan.Claims {
			if err := r.own(ctx, vm, client.ObjectKeyFromObject(pvc)); err != nil {
				return "", err
			}
		}
	}
	if err := r.adoptState(ctx, rs, vm, plan.StateClaim); err != nil {
		return "", err
	}
	return "", r.releaseTarget(ctx, vm, rs.Name)
}

// adoptState makes claim, restored from the VM's backend storage (EFI
// variables, vTPM), vm's backend-storage claim, as KubeVirt hands a
// restored one over: the claims labelled for vm before are deleted (the
// restore holds the VM, which is stopped), then claim is labelled for vm
// and controlled by it, whatever the volumeOwnershipPolicy, so that it
// goes with the VM as every backend-storage claim does.
func (r *RestoreReconciler) adoptState(ctx context.Context, rs *vmsnapshotv1.VirtualMachineRestore, vm *virtv1.VirtualMachine, claim string) error {
	if claim == "" {
		return nil
	}
	var l corev1.PersistentVolumeClaimList
	if err := r.client.List(ctx, &l, client.InNamespace(vm.Namespace), client.MatchingLabels{backendstorage.LabelVM: vm.Name}); err != nil {
		return fmt.Errorf("listing the backend-storage claims of VM %s: %w", vm.Name, err)
	}
	for i := range l.Items {
		old := &l.Items[i]
		if old.Name == claim || old.DeletionTimestamp != nil {
			continue
		}
		if err := r.client.Delete(ctx, old, client.Preconditions{UID: &old.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting backend-storage claim %s of VM %s: %w", old.Name, vm.Name, err)
		}
		r.recorder.Eventf(rs, corev1.EventTypeNormal, ReasonStateReplaced, "Deleted backend-storage claim %s: the restored %s replaces it", old.Name, claim)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: vm.Namespace, Name: claim}, pvc); err != nil {
		return fmt.Errorf("restored backend-storage claim %s: %w", claim, err)
	}
	if pvc.Labels[backendstorage.LabelVM] == vm.Name && metav1.IsControlledBy(pvc, vm) {
		return nil
	}
	upd := pvc.DeepCopy()
	if upd.Labels == nil {
		upd.Labels = map[string]string{}
	}
	upd.Labels[backendstorage.LabelVM] = vm.Name
	owners := []metav1.OwnerReference{*metav1.NewControllerRef(vm, virtv1.VirtualMachineGroupVersionKind)}
	for _, o := range upd.OwnerReferences {
		if o.UID != vm.UID {
			owners = append(owners, o)
		}
	}
	upd.OwnerReferences = owners
	if err := r.client.Patch(ctx, upd, client.MergeFromWithOptions(pvc, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("labelling restored backend-storage claim %s for VM %s: %w", claim, vm.Name, err)
	}
	return nil
}

// toDataVolume makes the DataVolume a claim restored in place is marked
// filled for (dvspec.AnnPopulatedFor) the claim's controller, if it
// exists: it takes its claim back, filled, as CDI's DataVolumes do.
func (r *RestoreReconciler) toDataVolume(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	name := pvc.Annotations[dvspec.AnnPopulatedFor]
	if name == "" {
		return nil
	}
	dv := &cdiv1.DataVolume{}
	switch err := r.client.Get(ctx, client.ObjectKey{Namespace: pvc.Namespace, Name: name}, dv); {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		// Its VM's template makes it again, and adopts the claim.
		return nil
	case err != nil:
		return fmt.Errorf("reading DataVolume %s/%s: %w", pvc.Namespace, name, err)
	}
	pvc.OwnerReferences = append(pvc.OwnerReferences, dvspec.OwnerRef(dv))
	return nil
}

// holdTarget marks an existing target VM as being restored
// (status.restoreInProgress), once it is stopped: a running VM is stopped
// first with targetReadinessPolicy StopTarget, waited for with
// WaitEventually, waited for until 5 minutes after the restore's creation
// with WaitGracePeriod, and otherwise fails the restore.
func (r *RestoreReconciler) holdTarget(ctx context.Context, rs *vmsnapshotv1.VirtualMachineRestore, vm *virtv1.VirtualMachine) (string, error) {
	if p := vm.Status.RestoreInProgress; p != nil && *p != rs.Name {
		return fmt.Sprintf("Waiting for restore %q of VirtualMachine %q", *p, vm.Name), nil
	}
	if vm.Status.RestoreInProgress == nil {
		vmi := &virtv1.VirtualMachineInstance{}
		err := r.client.Get(ctx, client.ObjectKeyFromObject(vm), vmi)
		if err == nil {
			switch ptr.Deref(rs.Spec.TargetReadinessPolicy, "") {
			case vmsnapshotv1.VirtualMachineRestoreStopTarget:
				if ptr.Deref(vm.Spec.RunStrategy, "") != virtv1.RunStrategyHalted {
					vm.Spec.RunStrategy, vm.Spec.Running = ptr.To(virtv1.RunStrategyHalted), nil
					if err := r.client.Update(ctx, vm); err != nil {
						return "", err
					}
				}
				return fmt.Sprintf("Waiting for VirtualMachine %q to stop", vm.Name), nil
			case vmsnapshotv1.VirtualMachineRestoreWaitEventually:
				return fmt.Sprintf("Waiting for VirtualMachine %q to stop", vm.Name), nil
			case vmsnapshotv1.VirtualMachineRestoreWaitGracePeriodAndFail:
				// As KubeVirt: the grace period runs from the restore's
				// creation.
				if r.clock.Since(rs.CreationTimestamp.Time) > vmsnapshotv1.DefaultGracePeriod {
					return "", failed("Restore target failed to be ready within %s. Please power off the target VM before attempting restore", vmsnapshotv1.DefaultGracePeriod)
				}
				return fmt.Sprintf("Waiting for target VM to be powered off. Please stop the restore target to proceed with restore, or the operation will fail after %s", vmsnapshotv1.DefaultGracePeriod), nil
			}
			return "", failed("VirtualMachine %q is running: a restore writes only a stopped VM (stop it, or set targetReadinessPolicy: StopTarget)", vm.Name)
		}
		if !apierrors.IsNotFound(err) {
			return "", err
		}
		vm.Status.RestoreInProgress = ptr.To(rs.Name)
		if err := r.client.Status().Update(ctx, vm); err != nil {
			return "", fmt.Errorf("marking VirtualMachine %s restored: %w", vm.Name, err)
		}
	}
	return "", nil
}

// releaseTarget clears the VM's restoreInProgress if this restore set it.
func (r *RestoreReconciler) releaseTarget(ctx context.Context, vm *virtv1.VirtualMachine, name string) error {
	if vm == nil || vm.Status.RestoreInProgress == nil || *vm.Status.RestoreInProgress != name {
		return nil
	}
	vm.Status.RestoreInProgress = nil
	return client.IgnoreNotFound(r.client.Status().Update(ctx, vm))
}

// dropClaims deletes the claims rs made that no VM took: a restore that
// fails or is deleted before it writes its VM leaves no claim behind.
func (r *RestoreReconciler) dropClaims(ctx context.Context, rs *vmsnapshotv1.VirtualMachineRestore) error {
	if rs.Status != nil && ptr.Deref(rs.Status.Complete, false) {
		// Its VM uses them (and owns them, unless volumeOwnershipPolicy
		// is None).
		return nil
	}
	var l corev1.PersistentVolumeClaimList
	if err := r.client.List(ctx, &l, client.InNamespace(rs.Namespace)); err != nil {
		return err
	}
	for i := range l.Items {
		pvc := &l.Items[i]
		if pvc.Annotations[snapshot.RestoreNameAnnotation] != rs.Name || len(pvc.OwnerReferences) > 0 || pvc.DeletionTimestamp != nil {
			continue
		}
		if err := r.client.Delete(ctx, pvc, client.Preconditions{UID: &pvc.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting claim %s of restore %s: %w", pvc.Name, rs.Name, err)
		}
	}
	return nil
}

// own makes vm an owner of the claim key.
func (r *RestoreReconciler) own(ctx context.Context, vm *virtv1.VirtualMachine, key client.ObjectKey) error {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.client.Get(ctx, key, pvc); err != nil {
		return err
	}
	for _, o := range pvc.OwnerReferences {
		if o.UID == vm.UID {
			return nil
		}
	}
	pvc.OwnerReferences = append(pvc.OwnerReferences, metav1.OwnerReference{APIVersion: virtv1.GroupVersion.String(),
		Kind: "VirtualMachine", Name: vm.Name, UID: vm.UID})
	return r.client.Update(ctx, pvc)
}

// target is the VM the restore writes, nil when it does not exist.
func (r *RestoreReconciler) target(ctx context.Context, rs *vmsnapshotv1.VirtualMachineRestore) (*virtv1.VirtualMachine, error) {
	vm := &virtv1.VirtualMachine{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: rs.Namespace, Name: rs.Spec.Target.Name}, vm); apierrors.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return vm, nil
}
