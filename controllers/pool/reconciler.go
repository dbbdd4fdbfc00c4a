package pool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	virtv1 "kubevirt.io/api/core/v1"
	poolv1 "kubevirt.io/api/pool/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/controllers/batch"
	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/controllers/events"
	"github.com/virtkit/virtkit/controllers/stale"
	"github.com/virtkit/virtkit/virt/spec"
)

// RetryUpdatesAfter is how soon a pool whose updates maxUnavailable held
// back is looked at again (KubeVirt's retry delay).
const RetryUpdatesAfter = 3 * time.Second

// Reconciler is the VirtualMachinePool controller. Build it with New, then
// call SetupWithManager, or call Reconcile directly with WithClient set.
type Reconciler struct {
	client   client.Client
	reader   client.Reader
	clock    clock.PassiveClock
	recorder EventRecorder
	shuffle  Shuffle
	burst    int
	workers  int
	// versions are the pool versions this controller's writes replaced.
	versions stale.Guard
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// WithClient sets the client the reconciler reads (from a cache) and writes
// through, and the uncached reader it counts VMs with before creating or
// deleting any. SetupWithManager uses the manager's unless set.
func WithClient(c client.Client, uncached client.Reader) Option {
	return func(r *Reconciler) { r.client, r.reader = c, uncached }
}

// New returns a pool reconciler with opts applied.
func New(opts ...Option) *Reconciler {
	r := defaults()
	for _, o := range opts {
		o(&r)
	}
	return &r
}

// SetupWithManager registers the reconciler with mgr: it watches pools, the
// VMs and ControllerRevisions they control, and the VMIs of those VMs.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.client == nil {
		r.client, r.reader = mgr.GetClient(), mgr.GetAPIReader()
	}
	r.recorder = events.OrManager(r.recorder, mgr, "virtualmachinepool-controller")
	return ctrl.NewControllerManagedBy(mgr).
		Named("virtualmachinepool").
		For(&poolv1.VirtualMachinePool{}).
		Owns(&virtv1.VirtualMachine{}).
		Owns(&appsv1.ControllerRevision{}).
		Watches(&virtv1.VirtualMachineInstance{}, handler.EnqueueRequestsFromMapFunc(r.poolOfVMI)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.workers}).
		Complete(r)
}

// poolOfVMI maps a VMI to the pool that controls its VM, if any.
func (r *Reconciler) poolOfVMI(ctx context.Context, obj client.Object) []reconcile.Request {
	vm := &virtv1.VirtualMachine{}
	if err := r.client.Get(ctx, client.ObjectKeyFromObject(obj), vm); err != nil {
		return nil
	}
	ref := metav1.GetControllerOfNoCopy(vm)
	if ref == nil || ref.Kind != poolv1.VirtualMachinePoolKind || ref.APIVersion != poolv1.SchemeGroupVersion.String() {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: vm.Namespace, Name: ref.Name}}}
}

// Reconcile brings a pool's VMs to its spec and writes its status if, and
// only if, it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pool := &poolv1.VirtualMachinePool{}
	if err := r.client.Get(ctx, req.NamespacedName, pool); err != nil {
		if apierrors.IsNotFound(err) {
			r.versions.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.versions.Stale(req.NamespacedName, pool.ResourceVersion) {
		return ctrl.Result{RequeueAfter: stale.RetryAfter}, nil
	}
	now := metav1.NewTime(r.clock.Now())
	sel, err := Selector(pool)
	if err != nil {
		serr := &SyncError{Reason: ReasonFailedScaleOut, Terminal: true, Err: fmt.Errorf("VirtualMachinePool %s: %w", req.NamespacedName, err)}
		if werr := r.writeStatus(ctx, pool, NextStatus(pool, "", Plan{}, serr, now)); werr != nil {
			return stale.RetryOn(ctx, werr)
		}
		return ctrl.Result{}, reconcile.TerminalError(serr)
	}
	if pool.DeletionTimestamp == nil && !controllerutil.ContainsFinalizer(pool, poolv1.VirtualMachinePoolControllerFinalizer) {
		upd := pool.DeepCopy()
		controllerutil.AddFinalizer(upd, poolv1.VirtualMachinePoolControllerFinalizer)
		if err := r.client.Update(ctx, upd); err != nil {
			return stale.RetryOn(ctx, fmt.Errorf("adding the finalizer of VirtualMachinePool %s: %w", req.NamespacedName, err))
		}
		r.versions.Replaced(req.NamespacedName, pool.ResourceVersion, upd.ResourceVersion)
		pool = upd
	}

	facts, err := r.facts(ctx, pool, r.client)
	if err != nil {
		return ctrl.Result{}, err
	}
	plan, err := PlanFor(facts)
	if err != nil {
		return ctrl.Result{}, err
	}
	if plan.Scales() {
		// The cache may not show the VMs just created or deleted: count
		// them again, uncached, before acting.
		if facts, err = r.facts(ctx, pool, r.reader); err != nil {
			return ctrl.Result{}, err
		}
		if plan, err = PlanFor(facts); err != nil {
			return ctrl.Result{}, err
		}
	}
	syncErr := r.apply(ctx, pool, facts, plan)
	if syncErr == nil && pool.DeletionTimestamp != nil && len(plan.Unfinalize) == 0 {
		if err := r.release(ctx, pool); err != nil {
			return stale.RetryOn(ctx, err)
		}
		return ctrl.Result{}, nil
	}
	st := NextStatus(pool, sel.String(), plan, syncErr, now)
	if err := r.writeStatus(ctx, pool, st); err != nil {
		return stale.RetryOn(ctx, err)
	}
	r.reportPause(pool, st)
	if syncErr != nil {
		return ctrl.Result{}, syncErr
	}
	if plan.Retry {
		return ctrl.Result{RequeueAfter: RetryUpdatesAfter}, nil
	}
	return ctrl.Result{}, nil
}

// facts reads what PlanFor needs through reader: the VMs and VMIs of the
// pool's namespace and the revisions the pool owns, with the current one.
func (r *Reconciler) facts(ctx context.Context, pool *poolv1.VirtualMachinePool, reader client.Reader) (Facts, error) {
	ns := client.InNamespace(pool.Namespace)
	vms := &virtv1.VirtualMachineList{}
	if err := reader.List(ctx, vms, ns); err != nil {
		return Facts{}, fmt.Errorf("listing VirtualMachines of pool %s/%s: %w", pool.Namespace, pool.Name, err)
	}
	vmis := &virtv1.VirtualMachineInstanceList{}
	if err := reader.List(ctx, vmis, ns); err != nil {
		return Facts{}, fmt.Errorf("listing VirtualMachineInstances of pool %s/%s: %w", pool.Namespace, pool.Name, err)
	}
	revs := &appsv1.ControllerRevisionList{}
	if err := reader.List(ctx, revs, ns); err != nil {
		return Facts{}, fmt.Errorf("listing ControllerRevisions of pool %s/%s: %w", pool.Namespace, pool.Name, err)
	}
	f := Facts{Pool: pool, VMs: vms.Items, VMIs: map[string]*virtv1.VirtualMachineInstance{}, Revisions: Revisions{},
		Burst: r.burst, Shuffle: r.shuffle}
	for i := range vmis.Items {
		f.VMIs[vmis.Items[i].Name] = &vmis.Items[i]
	}
	for i := range revs.Items {
		rev := &revs.Items[i]
		if ref := metav1.GetControllerOfNoCopy(rev); ref == nil || ref.UID != pool.UID {
			continue
		}
		s := &poolv1.VirtualMachinePoolSpec{}
		if err := json.Unmarshal(rev.Data.Raw, s); err != nil || s.VirtualMachineTemplate == nil {
			// Unreadable: as if missing (its VMs count as outdated), and pruned.
			s = &poolv1.VirtualMachinePoolSpec{}
		}
		f.Revisions[rev.Name] = s
	}
	f.Revisions[RevisionName(pool)] = &pool.Spec
	return f, nil
}

// apply carries out p, in KubeVirt's order, and returns the first failure
// with the ReplicaFailure reason it reports.
func (r *Reconciler) apply(ctx context.Context, pool *poolv1.VirtualMachinePool, f Facts, p Plan) *SyncError {
	vms := map[string]*virtv1.VirtualMachine{}
	for i := range f.VMs {
		vms[f.VMs[i].Name] = &f.VMs[i]
	}
	var errs []error
	for _, name := range p.Release {
		errs = append(errs, r.patchVM(ctx, vms[name], func(vm *virtv1.VirtualMachine) {
			vm.OwnerReferences = withoutOwner(vm.OwnerReferences, pool.UID)
		}))
	}
	for _, name := range p.Unfinalize {
		errs = append(errs, r.patchVM(ctx, vms[name], func(vm *virtv1.VirtualMachine) {
			controllerutil.RemoveFinalizer(vm, poolv1.VirtualMachinePoolControllerFinalizer)
		}))
	}
	if err := errors.Join(errs...); err != nil {
		return &SyncError{Reason: ReasonFailedUpdate, Err: err}
	}
	if p.NeedsRevision() {
		if err := r.storeRevision(ctx, pool); err != nil {
			return &SyncError{Reason: ReasonFailedScaleOut, Err: err}
		}
	}
	if len(p.Create) > 0 {
		if err := r.create(ctx, pool, p.Create); err != nil {
			return &SyncError{Reason: ReasonFailedScaleOut, Err: err}
		}
	}
	if len(p.Delete) > 0 {
		if err := r.deleteVMs(ctx, pool, vms, p.Delete); err != nil {
			return &SyncError{Reason: ReasonFailedScaleIn, Err: err}
		}
	}
	if err := r.update(ctx, pool, vms, f.VMIs, p); err != nil {
		return &SyncError{Reason: ReasonFailedUpdate, Err: err}
	}
	for _, name := range p.Prune {
		err := r.client.Delete(ctx, &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: pool.Namespace, Name: name}})
		if client.IgnoreNotFound(err) != nil {
			return &SyncError{Reason: ReasonFailedRevisionPruning, Err: fmt.Errorf("deleting revision %s/%s: %w", pool.Namespace, name, err)}
		}
	}
	return nil
}

// storeRevision keeps pool's current spec in the ControllerRevision
// RevisionName names, owned by the pool.
func (r *Reconciler) storeRevision(ctx context.Context, pool *poolv1.VirtualMachinePool) error {
	raw, err := json.Marshal(&pool.Spec)
	if err != nil {
		return fmt.Errorf("encoding the spec of VirtualMachinePool %s/%s: %w", pool.Namespace, pool.Name, err)
	}
	rev := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: RevisionName(pool), Namespace: pool.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pool, poolv1.SchemeGroupVersion.WithKind(poolv1.VirtualMachinePoolKind))}},
		Data:     runtime.RawExtension{Raw: raw},
		Revision: pool.Generation,
	}
	if err := r.client.Create(ctx, rev); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("storing revision %s/%s: %w", rev.Namespace, rev.Name, err)
	}
	return nil
}

// create creates the VMs at indices.
func (r *Reconciler) create(ctx context.Context, pool *poolv1.VirtualMachinePool, indices []int) error {
	revision := RevisionName(pool)
	_, err := batch.SlowStart(len(indices), func(i int) error {
		vm := spec.NewVMFromPool(pool, indices[i], revision)
		err := r.client.Create(ctx, vm)
		switch {
		case apierrors.IsAlreadyExists(err):
			// Taken since the count: the next reconcile picks another index.
			return nil
		case err != nil:
			r.recorder.Eventf(pool, corev1.EventTypeWarning, ReasonFailedCreate, "Error creating VM: %v", err)
			return fmt.Errorf("creating VirtualMachine %s/%s: %w", vm.Namespace, vm.Name, err)
		}
		r.recorder.Eventf(pool, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created VM %s/%s", vm.Namespace, vm.Name)
		return nil
	})
	return err
}

// deleteVMs deletes the named VMs, each only if it is still the one that
// was counted (its UID).
func (r *Reconciler) deleteVMs(ctx context.Context, pool *poolv1.VirtualMachinePool, vms map[string]*virtv1.VirtualMachine, names []string) error {
	_, err := batch.SlowStart(len(names), func(i int) error {
		vm := vms[names[i]]
		err := r.client.Delete(ctx, vm, client.Preconditions{UID: &vm.UID})
		switch {
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			return nil
		case err != nil:
			r.recorder.Eventf(pool, corev1.EventTypeWarning, ReasonFailedDelete, "Error deleting virtual machine %s/%s: %v", vm.Namespace, vm.Name, err)
			return fmt.Errorf("deleting VirtualMachine %s/%s: %w", vm.Namespace, vm.Name, err)
		}
		r.recorder.Eventf(pool, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted VM %s/%s with uid %v from pool", vm.Namespace, vm.Name, vm.UID)
		return nil
	})
	return err
}

// update rewrites outdated VMs from the current template, then restarts or
// relabels the VMIs p names.
func (r *Reconciler) update(ctx context.Context, pool *poolv1.VirtualMachinePool, vms map[string]*virtv1.VirtualMachine,
	vmis map[string]*virtv1.VirtualMachineInstance, p Plan) error {
	revision := RevisionName(pool)
	for _, name := range p.Update {
		vm := vms[name]
		i, _ := spec.PoolIndex(pool.Name, name)
		upd := vm.DeepCopy()
		upd.Labels = maps.Clone(pool.Spec.VirtualMachineTemplate.ObjectMeta.Labels)
		upd.Annotations = maps.Clone(pool.Spec.VirtualMachineTemplate.ObjectMeta.Annotations)
		upd.Spec = spec.PoolVMSpec(&pool.Spec, i)
		keepIdentity(vm, upd)
		spec.SetPoolRevision(upd, revision)
		if err := r.client.Update(ctx, upd); err != nil {
			r.recorder.Eventf(pool, corev1.EventTypeWarning, ReasonFailedUpdate, "Error updating virtual machine %s/%s: %v", vm.Namespace, vm.Name, err)
			return fmt.Errorf("updating VirtualMachine %s/%s: %w", vm.Namespace, vm.Name, err)
		}
		r.recorder.Eventf(pool, corev1.EventTypeNormal, ReasonSuccessfulUpdate, "Updated VM %s/%s", vm.Namespace, vm.Name)
	}
	for _, name := range p.Restart {
		vmi := vmis[name]
		if vmi == nil {
			continue
		}
		if err := r.client.Delete(ctx, vmi, client.Preconditions{UID: &vmi.UID}); client.IgnoreNotFound(err) != nil {
			r.recorder.Eventf(pool, corev1.EventTypeWarning, ReasonFailedUpdate, "Error updating resource %s/%s: %v", vmi.Namespace, vmi.Name, err)
			return fmt.Errorf("restarting VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)
		}
		r.recorder.Eventf(pool, corev1.EventTypeNormal, ReasonSuccessfulUpdate, "Restarted VM %s/%s on its updated spec", vmi.Namespace, vmi.Name)
	}
	for _, name := range p.Relabel {
		vmi, vm := vmis[name], vms[name]
		if vmi == nil || vm == nil {
			continue
		}
		upd := vmi.DeepCopy()
		if upd.Labels == nil {
			upd.Labels = map[string]string{}
		}
		upd.Labels[virtv1.VirtualMachinePoolRevisionName] = vm.Labels[virtv1.VirtualMachinePoolRevisionName]
		if err := r.client.Patch(ctx, upd, client.MergeFromWithOptions(vmi, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("labelling VirtualMachineInstance %s/%s with its revision: %w", vmi.Namespace, vmi.Name, err)
		}
	}
	return nil
}

// keepIdentity carries over what identifies a VM to its guest, which a
// template does not hold: the firmware UUID and serial.
func keepIdentity(old, upd *virtv1.VirtualMachine) {
	if old.Spec.Template == nil || upd.Spec.Template == nil || old.Spec.Template.Spec.Domain.Firmware == nil {
		return
	}
	was := old.Spec.Template.Spec.Domain.Firmware
	d := &upd.Spec.Template.Spec.Domain
	if d.Firmware == nil {
		d.Firmware = &virtv1.Firmware{}
	}
	if was.UUID != "" {
		d.Firmware.UUID = was.UUID
	}
	if was.Serial != "" {
		d.Firmware.Serial = was.Serial
	}
}

// patchVM changes vm with change, failing on a conflict if vm changed since
// it was read.
func (r *Reconciler) patchVM(ctx context.Context, vm *virtv1.VirtualMachine, change func(*virtv1.VirtualMachine)) error {
	upd := vm.DeepCopy()
	change(upd)
	err := r.client.Patch(ctx, upd, client.MergeFromWithOptions(vm, client.MergeFromWithOptimisticLock{}))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating VirtualMachine %s/%s: %w", vm.Namespace, vm.Name, err)
	}
	return nil
}

// release removes the finalizer from a pool being deleted once its VMs
// carry theirs no more; the garbage collector then deletes the VMs.
func (r *Reconciler) release(ctx context.Context, pool *poolv1.VirtualMachinePool) error {
	upd := pool.DeepCopy()
	if !controllerutil.RemoveFinalizer(upd, poolv1.VirtualMachinePoolControllerFinalizer) {
		return nil
	}
	if err := r.client.Update(ctx, upd); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing the finalizer of VirtualMachinePool %s/%s: %w", pool.Namespace, pool.Name, err)
	}
	return nil
}

// writeStatus updates pool's status to st unless it is already st.
func (r *Reconciler) writeStatus(ctx context.Context, pool *poolv1.VirtualMachinePool, st poolv1.VirtualMachinePoolStatus) error {
	if equality.Semantic.DeepEqual(pool.Status, st) {
		return nil
	}
	upd := pool.DeepCopy()
	upd.Status = st
	if err := r.client.Status().Update(ctx, upd); err != nil {
		return fmt.Errorf("updating status of VirtualMachinePool %s/%s: %w", pool.Namespace, pool.Name, err)
	}
	r.versions.Replaced(client.ObjectKeyFromObject(pool), pool.ResourceVersion, upd.ResourceVersion)
	logf.FromContext(ctx).V(1).Info("status updated", "replicas", st.Replicas, "readyReplicas", st.ReadyReplicas)
	return nil
}

// reportPause records KubeVirt's event when a status write paused or
// resumed pool.
func (r *Reconciler) reportPause(pool *poolv1.VirtualMachinePool, st poolv1.VirtualMachinePoolStatus) {
	k := conditions.Pool()
	was := k.Find(pool.Status.Conditions, poolv1.VirtualMachinePoolReplicaPaused) != nil
	is := k.Find(st.Conditions, poolv1.VirtualMachinePoolReplicaPaused) != nil
	switch {
	case is && !was:
		r.recorder.Eventf(pool, corev1.EventTypeNormal, ReasonPaused, "Pool is paused")
	case was && !is:
		r.recorder.Eventf(pool, corev1.EventTypeNormal, ReasonResumed, "Pool is unpaused")
	}
}

func withoutOwner(refs []metav1.OwnerReference, uid types.UID) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, o := range refs {
		if o.UID != uid {
			out = append(out, o)
		}
	}
	return out
}
