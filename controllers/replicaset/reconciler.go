package replicaset

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/controllers/batch"
	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/controllers/events"
	"github.com/virtkit/virtkit/controllers/stale"
	"github.com/virtkit/virtkit/virt/spec"
)

// Reconciler is the VirtualMachineInstanceReplicaSet controller. Build it
// with New, then call SetupWithManager, or call Reconcile directly with
// WithClient set.
type Reconciler struct {
	client     client.Client
	reader     client.Reader
	clock      clock.PassiveClock
	recorder   EventRecorder
	specSource SpecOptionsSource
	burst      int
	workers    int
	// versions are the replica set versions this controller's status
	// writes replaced.
	versions stale.Guard
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// WithClient sets the client the reconciler reads (from a cache) and writes
// through, and the uncached reader it counts VMIs with before creating or
// deleting any. SetupWithManager uses the manager's unless set.
func WithClient(c client.Client, uncached client.Reader) Option {
	return func(r *Reconciler) { r.client, r.reader = c, uncached }
}

// New returns a replica set reconciler with opts applied.
func New(opts ...Option) *Reconciler {
	r := defaults()
	for _, o := range opts {
		o(&r)
	}
	return &r
}

// SetupWithManager registers the reconciler with mgr: it watches replica
// sets and every VMI, a VMI waking the replica set that controls it or,
// for an orphan, those whose selector matches it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.client == nil {
		r.client, r.reader = mgr.GetClient(), mgr.GetAPIReader()
	}
	r.recorder = events.OrManager(r.recorder, mgr, "virtualmachineinstancereplicaset-controller")
	return ctrl.NewControllerManagedBy(mgr).
		Named("virtualmachineinstancereplicaset").
		For(&virtv1.VirtualMachineInstanceReplicaSet{}).
		Watches(&virtv1.VirtualMachineInstance{}, handler.EnqueueRequestsFromMapFunc(r.replicaSetsOf)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.workers}).
		Complete(r)
}

// replicaSetsOf maps a VMI to the replica sets it concerns. Update events
// map the old and the new VMI, so a VMI released or relabelled wakes both
// sides.
func (r *Reconciler) replicaSetsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		gvk := virtv1.VirtualMachineInstanceReplicaSetGroupVersionKind
		if ref.Kind != gvk.Kind || ref.APIVersion != gvk.GroupVersion().String() {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}}}
	}
	list := &virtv1.VirtualMachineInstanceReplicaSetList{}
	if err := r.client.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		logf.FromContext(ctx).Error(err, "listing replica sets for an orphan VirtualMachineInstance", "vmi", obj.GetName())
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		rs := &list.Items[i]
		if sel, err := Selector(rs); err == nil && sel.Matches(labels.Set(obj.GetLabels())) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(rs)})
		}
	}
	return out
}

// Reconcile claims a replica set's VMIs, creates or deletes VMIs until
// spec.replicas are active, and writes the status if, and only if, it
// changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rs := &virtv1.VirtualMachineInstanceReplicaSet{}
	if err := r.client.Get(ctx, req.NamespacedName, rs); err != nil {
		if apierrors.IsNotFound(err) {
			r.versions.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.versions.Stale(req.NamespacedName, rs.ResourceVersion) {
		// Our own last write is not in the cache yet; its event follows.
		return ctrl.Result{RequeueAfter: stale.RetryAfter}, nil
	}
	now := metav1.NewTime(r.clock.Now())
	sel, err := Selector(rs)
	if err != nil {
		// The webhook refuses such a replica set; one stored past it waits
		// for a spec change.
		serr := &ScaleError{Reason: ReasonFailedCreate, Terminal: true,
			Err: fmt.Errorf("VirtualMachineInstanceReplicaSet %s: %w", req.NamespacedName, err)}
		if werr := r.writeStatus(ctx, rs, NextStatus(rs, "", Plan{}, serr, now)); werr != nil {
			return stale.RetryOn(ctx, werr)
		}
		return ctrl.Result{}, reconcile.TerminalError(serr)
	}

	vmis := &virtv1.VirtualMachineInstanceList{}
	if err := r.client.List(ctx, vmis, client.InNamespace(rs.Namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing VirtualMachineInstances of %s: %w", req.NamespacedName, err)
	}
	plan, err := PlanFor(rs, vmis.Items, r.burst)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.claim(ctx, rs, vmis.Items, plan); err != nil {
		return stale.RetryOn(ctx, err)
	}
	var scaleErr *ScaleError
	if plan.Scales() {
		// The cache may not show the VMIs this controller just created or
		// deleted: count them again, uncached, before acting.
		fresh := &virtv1.VirtualMachineInstanceList{}
		if err := r.reader.List(ctx, fresh, client.InNamespace(rs.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return ctrl.Result{}, fmt.Errorf("listing VirtualMachineInstances of %s: %w", req.NamespacedName, err)
		}
		if plan, err = PlanFor(rs, fresh.Items, r.burst); err != nil {
			return ctrl.Result{}, err
		}
		scaleErr = r.scale(ctx, rs, fresh.Items, plan)
	}

	st := NextStatus(rs, sel.String(), plan, scaleErr, now)
	if err := r.writeStatus(ctx, rs, st); err != nil {
		return stale.RetryOn(ctx, err)
	}
	r.reportPause(rs, st)
	if scaleErr != nil {
		if scaleErr.Terminal {
			return ctrl.Result{}, reconcile.TerminalError(scaleErr)
		}
		return ctrl.Result{}, scaleErr
	}
	return ctrl.Result{}, nil
}

// claim makes rs the controller of the orphans plan adopts and lets go of
// those it releases. As Kubernetes' controllers, it adopts only after an
// uncached read finds rs still there and not being deleted.
func (r *Reconciler) claim(ctx context.Context, rs *virtv1.VirtualMachineInstanceReplicaSet, vmis []virtv1.VirtualMachineInstance, p Plan) error {
	if len(p.Adopt) == 0 && len(p.Release) == 0 {
		return nil
	}
	byName := make(map[string]*virtv1.VirtualMachineInstance, len(vmis))
	for i := range vmis {
		byName[vmis[i].Name] = &vmis[i]
	}
	adopt := p.Adopt
	if len(adopt) > 0 {
		fresh := &virtv1.VirtualMachineInstanceReplicaSet{}
		if err := r.reader.Get(ctx, client.ObjectKeyFromObject(rs), fresh); err != nil {
			return client.IgnoreNotFound(err)
		}
		if fresh.UID != rs.UID || fresh.DeletionTimestamp != nil {
			adopt = nil
		}
	}
	ref := metav1.NewControllerRef(rs, virtv1.VirtualMachineInstanceReplicaSetGroupVersionKind)
	var errs []error
	for _, name := range adopt {
		errs = append(errs, r.patchOwners(ctx, byName[name], func(refs []metav1.OwnerReference) []metav1.OwnerReference {
			return append(refs, *ref)
		}))
	}
	for _, name := range p.Release {
		errs = append(errs, r.patchOwners(ctx, byName[name], func(refs []metav1.OwnerReference) []metav1.OwnerReference {
			var out []metav1.OwnerReference
			for _, o := range refs {
				if o.UID != rs.UID {
					out = append(out, o)
				}
			}
			return out
		}))
	}
	return errors.Join(errs...)
}

// patchOwners changes vmi's owner references with change, failing on a
// conflict if vmi changed since it was read.
func (r *Reconciler) patchOwners(ctx context.Context, vmi *virtv1.VirtualMachineInstance, change func([]metav1.OwnerReference) []metav1.OwnerReference) error {
	upd := vmi.DeepCopy()
	upd.OwnerReferences = change(upd.OwnerReferences)
	err := r.client.Patch(ctx, upd, client.MergeFromWithOptions(vmi, client.MergeFromWithOptimisticLock{}))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("setting the owners of VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	return nil
}

// scale creates and deletes what p says, in batches that double while they
// succeed (as Kubernetes' replica sets), so that a replica set that cannot
// create VMIs (quota, a refusing webhook) fails with one request, not
// hundreds. Finished VMIs go only once the count is right.
func (r *Reconciler) scale(ctx context.Context, rs *virtv1.VirtualMachineInstanceReplicaSet, vmis []virtv1.VirtualMachineInstance, p Plan) *ScaleError {
	if p.Create > 0 {
		if err := r.create(ctx, rs, p.Create); err != nil {
			return err
		}
	}
	byName := make(map[string]*virtv1.VirtualMachineInstance, len(vmis))
	for i := range vmis {
		byName[vmis[i].Name] = &vmis[i]
	}
	if len(p.Delete) > 0 {
		if err := r.delete(ctx, rs, byName, p.Delete); err != nil {
			return &ScaleError{Reason: ReasonFailedDelete, Err: err}
		}
	}
	if len(p.Clean) > 0 {
		if err := r.delete(ctx, rs, byName, p.Clean); err != nil {
			return &ScaleError{Reason: ReasonFailedDelete, Err: err}
		}
	}
	return nil
}

// create creates n VMIs of rs's template.
func (r *Reconciler) create(ctx context.Context, rs *virtv1.VirtualMachineInstanceReplicaSet, n int) *ScaleError {
	opts, err := r.specSource(ctx)
	if err != nil {
		return &ScaleError{Reason: ReasonFailedCreate, Err: fmt.Errorf("VirtualMachineInstanceReplicaSet %s/%s: the cluster's settings: %w", rs.Namespace, rs.Name, err)}
	}
	proto := spec.NewVMIFromReplicaSet(rs)
	// Born with the VMI controller's finalizer, which it would otherwise
	// add with a write of its own.
	proto.Finalizers = append(proto.Finalizers, virtv1.VirtualMachineInstanceFinalizer)
	spec.DefaultVMI(proto, opts...)
	// The template at its own paths first; then the VMI it makes, defaulted.
	errs := spec.ValidateReplicaSet(rs, opts...)
	if len(errs) == 0 {
		errs = spec.ValidateVMI(proto, opts...)
	}
	if len(errs) > 0 {
		err := fmt.Errorf("VirtualMachineInstanceReplicaSet %s/%s: %w", rs.Namespace, rs.Name, errs.ToAggregate())
		r.recorder.Eventf(rs, corev1.EventTypeWarning, ReasonFailedCreate, "Error creating virtual machine instance: %v", err)
		// Only a change of the template helps.
		return &ScaleError{Reason: ReasonFailedCreate, Err: err, Terminal: true}
	}
	_, err = batch.SlowStart(n, func(int) error {
		vmi := proto.DeepCopy()
		if err := r.client.Create(ctx, vmi); err != nil {
			r.recorder.Eventf(rs, corev1.EventTypeWarning, ReasonFailedCreate, "Error creating virtual machine instance: %v", err)
			return fmt.Errorf("creating a VirtualMachineInstance of %s/%s: %w", rs.Namespace, rs.Name, err)
		}
		r.recorder.Eventf(rs, corev1.EventTypeNormal, ReasonSuccessfulCreate,
			"Started the virtual machine by creating the new virtual machine instance %v", vmi.Name)
		return nil
	})
	if err != nil {
		return &ScaleError{Reason: ReasonFailedCreate, Err: err}
	}
	return nil
}

// delete deletes the named VMIs of vmis, each only if it is still the one
// that was counted (its UID).
func (r *Reconciler) delete(ctx context.Context, rs *virtv1.VirtualMachineInstanceReplicaSet, vmis map[string]*virtv1.VirtualMachineInstance, names []string) error {
	_, err := batch.SlowStart(len(names), func(i int) error {
		vmi := vmis[names[i]]
		err := r.client.Delete(ctx, vmi, client.Preconditions{UID: &vmi.UID})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			// Gone already, or replaced by a VMI of the same name.
			return nil
		}
		if err != nil {
			r.recorder.Eventf(rs, corev1.EventTypeWarning, ReasonFailedDelete, "Error deleting virtual machine instance %s: %v", vmi.Name, err)
			return fmt.Errorf("deleting VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)
		}
		r.recorder.Eventf(rs, corev1.EventTypeNormal, ReasonSuccessfulDelete,
			"Stopped the virtual machine by deleting the virtual machine instance %v", vmi.Name)
		return nil
	})
	return err
}

// writeStatus updates rs's status to st unless it is already st. The
// update carries rs's resourceVersion: a replica set changed meanwhile
// fails with a conflict.
func (r *Reconciler) writeStatus(ctx context.Context, rs *virtv1.VirtualMachineInstanceReplicaSet, st virtv1.VirtualMachineInstanceReplicaSetStatus) error {
	if equality.Semantic.DeepEqual(rs.Status, st) {
		return nil
	}
	upd := rs.DeepCopy()
	upd.Status = st
	if err := r.client.Status().Update(ctx, upd); err != nil {
		return fmt.Errorf("updating status of VirtualMachineInstanceReplicaSet %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	r.versions.Replaced(client.ObjectKeyFromObject(rs), rs.ResourceVersion, upd.ResourceVersion)
	logf.FromContext(ctx).V(1).Info("status updated", "replicas", st.Replicas, "readyReplicas", st.ReadyReplicas)
	return nil
}

// reportPause records KubeVirt's event when a status write paused or
// resumed rs.
func (r *Reconciler) reportPause(rs *virtv1.VirtualMachineInstanceReplicaSet, st virtv1.VirtualMachineInstanceReplicaSetStatus) {
	kind := conditions.ReplicaSet()
	was := kind.Find(rs.Status.Conditions, virtv1.VirtualMachineInstanceReplicaSetReplicaPaused) != nil
	is := kind.Find(st.Conditions, virtv1.VirtualMachineInstanceReplicaSetReplicaPaused) != nil
	switch {
	case is && !was:
		r.recorder.Eventf(rs, corev1.EventTypeNormal, ReasonPaused, "Paused")
	case was && !is:
		r.recorder.Eventf(rs, corev1.EventTypeNormal, ReasonResumed, "Resumed")
	}
}
