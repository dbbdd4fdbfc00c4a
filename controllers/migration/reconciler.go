package migration

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/controllers/events"
	"github.com/virtkit/virtkit/controllers/stale"
	"github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/virt/clusterconfig"
	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virt/storage/backendstorage"
)

// Reasons of the events the controller records on migrations.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonFailedCreate     = "FailedCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonAbortRequested   = "MigrationAbortRequested"
	ReasonFailed           = "MigrationFailed"
	ReasonSucceeded        = "MigrationSucceeded"
)

// Reconciler is the VirtualMachineInstanceMigration controller. Build it
// with New, then call SetupWithManager.
type Reconciler struct {
	client    client.Client
	reader    client.Reader
	clock     clock.PassiveClock
	podOpts   vmi.PodOptions
	podSource vmi.PodOptionsSource
	namespace string
	recorder  EventRecorder
	timeouts  Timeouts
	// migrations and vmis are the versions of migrations and VMIs this
	// controller's writes replaced.
	migrations stale.Guard
	vmis       stale.Guard
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// New returns a migration controller with opts applied.
func New(opts ...Option) *Reconciler {
	r := &Reconciler{clock: clock.RealClock{}, recorder: events.Discard(), namespace: clusterconfig.DefaultNamespace}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Reconcile moves one migration a step on (Decide) and carries the step out.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	mig := &virtv1.VirtualMachineInstanceMigration{}
	if err := r.client.Get(ctx, req.NamespacedName, mig); err != nil {
		if apierrors.IsNotFound(err) {
			r.migrations.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.migrations.Stale(req.NamespacedName, mig.ResourceVersion) {
		return ctrl.Result{RequeueAfter: stale.RetryAfter}, nil
	}
	o := Observed{Migration: mig, Now: r.clock.Now(), Timeouts: r.timeouts}
	v := &virtv1.VirtualMachineInstance{}
	vmiKey := types.NamespacedName{Namespace: mig.Namespace, Name: mig.Spec.VMIName}
	switch err := r.client.Get(ctx, vmiKey, v); {
	case err == nil:
		if r.vmis.Stale(vmiKey, v.ResourceVersion) {
			return ctrl.Result{RequeueAfter: stale.RetryAfter}, nil
		}
		o.VMI = v
	case apierrors.IsNotFound(err):
		r.vmis.Forget(vmiKey)
	default:
		return ctrl.Result{}, fmt.Errorf("migration %s: VirtualMachineInstance %s: %w", req.NamespacedName, mig.Spec.VMIName, err)
	}
	var err error
	if o.Target, err = r.targetPod(ctx, mig); err != nil {
		return ctrl.Result{}, err
	}
	if mig.Status.Phase == virtv1.MigrationScheduled && o.Target != nil {
		if o.AttachPods, err = r.attachPods(ctx, o.Target); err != nil {
			return ctrl.Result{}, err
		}
	}
	if mig.Status.Phase == virtv1.MigrationPending && o.VMI != nil {
		if o.Admitted, err = r.admitted(ctx, mig, o.VMI.Status.NodeName); err != nil {
			return ctrl.Result{}, err
		}
	}
	if mig.IsFinal() && controllerutil.ContainsFinalizer(mig, Finalizer) {
		// Until it is settled, what it copied is kept or dropped.
		if o.Copies, err = r.copies(ctx, mig); err != nil {
			return ctrl.Result{}, err
		}
		// Only a VMI with backend storage has one (when the VMI is gone,
		// whether it had is not known: look).
		if o.VMI == nil || backendstorage.Needed(&o.VMI.Spec) {
			if o.StateClaim, err = r.stateClaim(ctx, mig); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	step := Decide(o)
	res, err := r.carryOut(ctx, o, step)
	if apierrors.IsConflict(err) {
		logf.FromContext(ctx).V(1).Info("conflict, looking again", "error", err.Error())
		return ctrl.Result{RequeueAfter: stale.RetryAfter}, nil
	}
	return res, err
}

// carryOut makes step happen, in the order of its fields.
func (r *Reconciler) carryOut(ctx context.Context, o Observed, s Step) (ctrl.Result, error) {
	mig, v := o.Migration, o.VMI
	log := logf.FromContext(ctx)
	if s.AddFinalizer {
		controllerutil.AddFinalizer(mig, Finalizer)
		if err := r.updateMigration(ctx, mig); err != nil {
			return ctrl.Result{}, fmt.Errorf("migration %s/%s: adding finalizer: %w", mig.Namespace, mig.Name, err)
		}
	}
	if len(s.CopyClaims) > 0 {
		if err := r.copyClaims(ctx, mig, v, s.CopyClaims); err != nil {
			return ctrl.Result{}, err
		}
	}
	target := o.Target
	if s.CreateTarget {
		opts, err := r.podOptions(ctx)
		var pod *corev1.Pod
		if err == nil && backendstorage.Needed(&v.Spec) {
			opts.StateClaim, err = r.targetStateClaim(ctx, mig, v, opts)
		}
		if err == nil {
			opts.BlockVolumes, err = vmi.BlockVolumes(ctx, r.client, v)
		}
		if err == nil {
			pod, err = vmi.RenderTargetPod(v, mig, v.Status.NodeName, opts)
		}
		if err == nil {
			err = r.client.Create(ctx, pod)
		}
		if err != nil {
			err = fmt.Errorf("migration %s/%s: creating the target pod: %w", mig.Namespace, mig.Name, err)
			r.recorder.Eventf(mig, corev1.EventTypeWarning, ReasonFailedCreate, "Error creating the target pod: %v", err)
			if errors.Is(err, vmi.ErrInvalidVMI) {
				return ctrl.Result{}, r.writePhase(ctx, mig, v, virtv1.MigrationFailed, err.Error())
			}
			return ctrl.Result{}, err
		}
		r.recorder.Eventf(mig, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created migration target pod %s", pod.Name)
		log.Info("target pod created", "pod", pod.Name, "source", v.Status.NodeName)
		target = pod
	}
	if s.StartState {
		st, err := r.startState(ctx, mig, v, target)
		if err != nil {
			// A configuration that cannot apply (a bad MigrationPolicy) fails the migration.
			return ctrl.Result{}, errors.Join(r.deleteTarget(ctx, mig, target), r.writePhase(ctx, mig, v, virtv1.MigrationFailed, err.Error()))
		}
		if err := r.patchState(ctx, v, func(ms **virtv1.VirtualMachineInstanceMigrationState) { *ms = st }); err != nil {
			return ctrl.Result{}, err
		}
	}
	if s.TargetNode != "" {
		if err := r.patchState(ctx, v, func(ms **virtv1.VirtualMachineInstanceMigrationState) { (*ms).TargetNode = s.TargetNode }); err != nil {
			return ctrl.Result{}, err
		}
	}
	if len(s.CreateAttachPods) > 0 {
		if err := r.createAttachPods(ctx, mig, v, target, s.CreateAttachPods); err != nil {
			return ctrl.Result{}, err
		}
	}
	if s.RequestAbort {
		if err := r.patchState(ctx, v, func(ms **virtv1.VirtualMachineInstanceMigrationState) {
			(*ms).AbortRequested, (*ms).AbortStatus = true, virtv1.MigrationAbortInProgress
		}); err != nil {
			return ctrl.Result{}, err
		}
		r.recorder.Eventf(mig, corev1.EventTypeNormal, ReasonAbortRequested, "Abort of the running migration requested: the migration was deleted")
		log.Info("migration deleted while it runs: abort requested")
	}
	if s.FailState != "" {
		now := metav1.NewTime(r.clock.Now().Truncate(time.Second))
		if err := r.patchState(ctx, v, func(ms **virtv1.VirtualMachineInstanceMigrationState) {
			m := *ms
			m.Completed, m.Failed, m.FailureReason, m.EndTimestamp = true, true, s.FailState, &now
			if mig.DeletionTimestamp != nil {
				m.AbortRequested, m.AbortStatus = true, virtv1.MigrationAbortSucceeded
			}
		}); err != nil {
			return ctrl.Result{}, err
		}
	}
	if s.DeleteTarget {
		if err := r.deleteTarget(ctx, mig, target); err != nil {
			return ctrl.Result{}, err
		}
	}
	if s.Phase != "" {
		if err := r.writePhase(ctx, mig, v, s.Phase, s.Reason); err != nil {
			return ctrl.Result{}, err
		}
	} else if err := r.writePhase(ctx, mig, v, mig.Status.Phase, ""); err != nil {
		return ctrl.Result{}, err // the mirrored migrationState only
	}
	if s.KeepCopies {
		if err := r.keepCopies(ctx, mig, v, o.Copies); err != nil {
			return ctrl.Result{}, err
		}
	}
	if s.DropCopies {
		if err := r.dropCopies(ctx, mig, v, o.Copies); err != nil {
			return ctrl.Result{}, err
		}
	}
	if s.HandOffState {
		if err := r.handOffState(ctx, mig, o.StateClaim); err != nil {
			return ctrl.Result{}, err
		}
	}
	if s.DropState {
		if err := r.dropState(ctx, mig, o.StateClaim); err != nil {
			return ctrl.Result{}, err
		}
	}
	if s.RemoveFinalizer {
		controllerutil.RemoveFinalizer(mig, Finalizer)
		if err := r.updateMigration(ctx, mig); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("migration %s/%s: removing finalizer: %w", mig.Namespace, mig.Name, err)
		}
	}
	return ctrl.Result{RequeueAfter: s.Wait}, nil
}

// updateMigration updates mig (metadata and spec) and remembers its old
// version as stale.
func (r *Reconciler) updateMigration(ctx context.Context, mig *virtv1.VirtualMachineInstanceMigration) error {
	old := mig.ResourceVersion
	if err := r.client.Update(ctx, mig); err != nil {
		return err
	}
	r.migrations.Replaced(client.ObjectKeyFromObject(mig), old, mig.ResourceVersion)
	return nil
}

// targetPod returns the migration's target pod, nil when there is none.
func (r *Reconciler) targetPod(ctx context.Context, mig *virtv1.VirtualMachineInstanceMigration) (*corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(mig.Namespace),
		client.MatchingLabels{virtv1.MigrationJobLabel: string(mig.UID)}); err != nil {
		return nil, fmt.Errorf("migration %s/%s: listing its target pod: %w", mig.Namespace, mig.Name, err)
	}
	var found *corev1.Pod
	for i := range pods.Items {
		if p := &pods.Items[i]; found == nil || (found.DeletionTimestamp != nil && p.DeletionTimestamp == nil) {
			found = p
		}
	}
	return found, nil
}

// attachPods are the attachment pods target controls.
func (r *Reconciler) attachPods(ctx context.Context, target *corev1.Pod) ([]*corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(target.Namespace),
		client.MatchingLabels{virtv1.AppLabel: contract.HotplugLabelValue}); err != nil {
		return nil, fmt.Errorf("listing the attachment pods of target pod %s/%s: %w", target.Namespace, target.Name, err)
	}
	var out []*corev1.Pod
	for i := range pods.Items {
		if p := &pods.Items[i]; vmi.AttachedVolume(p) != "" && metav1.IsControlledBy(p, target) {
			out = append(out, p)
		}
	}
	return out, nil
}

// createAttachPods creates the attachment pods of the hotplugged volumes
// named next to the target pod, as KubeVirt's migration controller does:
// the target's handler binds their images into it before the guest comes.
func (r *Reconciler) createAttachPods(ctx context.Context, mig *virtv1.VirtualMachineInstanceMigration, v *virtv1.VirtualMachineInstance, target *corev1.Pod, volumes []string) error {
	opts, err := r.podOptions(ctx)
	if err != nil {
		return err
	}
	for _, name := range volumes {
		pod, err := vmi.CreateAttachPod(ctx, r.client, v, target, name, opts)
		if err != nil {
			return fmt.Errorf("migration %s/%s: %w", mig.Namespace, mig.Name, err)
		}
		if pod != nil {
			r.recorder.Eventf(mig, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created attachment pod %s, for volume %s", pod.Name, name)
			logf.FromContext(ctx).Info("target attachment pod created", "pod", pod.Name, "volume", name)
		}
	}
	return nil
}

func (r *Reconciler) deleteTarget(ctx context.Context, mig *virtv1.VirtualMachineInstanceMigration, pod *corev1.Pod) error {
	if pod == nil || pod.DeletionTimestamp != nil {
		return nil
	}
	if err := r.client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("migration %s/%s: deleting the target pod %s: %w", mig.Namespace, mig.Name, pod.Name, err)
	}
	r.recorder.Eventf(mig, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted migration target pod %s", pod.Name)
	return nil
}

// patchState changes the VMI's status.migrationState with edit (a merge
// patch guarded by the VMI's resourceVersion) and updates v.
func (r *Reconciler) patchState(ctx context.Context, v *virtv1.VirtualMachineInstance, edit func(**virtv1.VirtualMachineInstanceMigrationState)) error {
	upd := v.DeepCopy()
	edit(&upd.Status.MigrationState)
	if equality.Semantic.DeepEqual(v.Status.MigrationState, upd.Status.MigrationState) {
		return nil
	}
	if err := r.client.Status().Patch(ctx, upd, client.MergeFromWithOptions(v, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("VirtualMachineInstance %s/%s: status.migrationState: %w", v.Namespace, v.Name, err)
	}
	r.vmis.Replaced(client.ObjectKeyFromObject(v), v.ResourceVersion, upd.ResourceVersion)
	*v = *upd
	return nil
}

// writePhase writes the migration's status: phase (with its transition
// time), and the VMI's migrationState mirrored while it is this
// migration's. reason, for a failure, goes to the mirrored failureReason.
func (r *Reconciler) writePhase(ctx context.Context, mig *virtv1.VirtualMachineInstanceMigration, v *virtv1.VirtualMachineInstance, phase virtv1.VirtualMachineInstanceMigrationPhase, reason string) error {
	st := *mig.Status.DeepCopy()
	if st.Phase != phase {
		st.Phase = phase
		st.PhaseTransitionTimestamps = append(st.PhaseTransitionTimestamps, virtv1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{
			Phase: phase, PhaseTransitionTimestamp: metav1.NewTime(r.clock.Now().Truncate(time.Second))})
	}
	if ms := StateOf(v, mig); ms != nil {
		st.MigrationState = ms.DeepCopy()
	}
	if reason != "" && phase == virtv1.MigrationFailed {
		if st.MigrationState == nil {
			st.MigrationState = &virtv1.VirtualMachineInstanceMigrationState{MigrationUID: mig.UID}
		}
		if st.MigrationState.FailureReason == "" {
			st.MigrationState.FailureReason = reason
		}
		st.MigrationState.Failed = true
	}
	if equality.Semantic.DeepEqual(mig.Status, st) {
		return nil
	}
	upd := mig.DeepCopy()
	upd.Status = st
	if err := r.client.Status().Update(ctx, upd); err != nil {
		return fmt.Errorf("migration %s/%s: status (phase %s): %w", mig.Namespace, mig.Name, phase, err)
	}
	r.migrations.Replaced(client.ObjectKeyFromObject(mig), mig.ResourceVersion, upd.ResourceVersion)
	if mig.Status.Phase != phase {
		logf.FromContext(ctx).Info("migration phase", "phase", phase, "reason", reason)
		switch phase {
		case virtv1.MigrationFailed:
			r.recorder.Eventf(mig, corev1.EventTypeWarning, ReasonFailed, "The migration failed: %s", reason)
		case virtv1.MigrationSucceeded:
			node := ""
			if st.MigrationState != nil {
				node = st.MigrationState.TargetNode
			}
			r.recorder.Eventf(mig, corev1.EventTypeNormal, ReasonSucceeded, "The migration of %s to node %s succeeded", mig.Spec.VMIName, node)
		}
	}
	*mig = *upd
	return nil
}

// sourcePod is the name of the VMI's current launcher pod.
func (r *Reconciler) sourcePod(ctx context.Context, v *virtv1.VirtualMachineInstance) (string, error) {
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(v.Namespace),
		client.MatchingLabels{virtv1.CreatedByLabel: string(v.UID)}); err != nil {
		return "", fmt.Errorf("VirtualMachineInstance %s/%s: listing its launcher pods: %w", v.Namespace, v.Name, err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && vmi.IsCurrentPod(v, &p) && p.Spec.NodeName == v.Status.NodeName {
			return p.Name, nil
		}
	}
	return "", nil
}

// podOptions are the options of a target pod rendered now.
func (r *Reconciler) podOptions(ctx context.Context) (vmi.PodOptions, error) {
	if r.podSource == nil {
		return r.podOpts, nil
	}
	return r.podSource(ctx)
}
