package clone

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	clonev1 "kubevirt.io/api/clone/v1beta1"
	virtv1 "kubevirt.io/api/core/v1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/controllers/events"
	"github.com/virtkit/virtkit/virt/clone"
	"github.com/virtkit/virtkit/virt/storage/snapshot"
)

// retryInterval is how soon a clone that waits is looked at again, should
// no watched object change first.
const retryInterval = 5 * time.Second

// Reconciler is the VirtualMachineClone controller.
type Reconciler struct {
	client   client.Client
	clock    clock.PassiveClock
	recorder events.Recorder
}

// New returns a clone reconciler with opts applied.
func New(opts ...Option) *Reconciler {
	r := &Reconciler{clock: clock.RealClock{}, recorder: events.Discard()}
	for _, o := range opts {
		o(r)
	}
	return r
}

// SetupWithManager registers the reconciler with mgr: it watches clones,
// the snapshots and restores they make or name, and the VMs they copy
// and make.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.client == nil {
		r.client = mgr.GetClient()
	}
	r.recorder = events.OrManager(r.recorder, mgr, "virt-controller")
	return ctrl.NewControllerManagedBy(mgr).
		Named("virtualmachineclone").
		For(&clonev1.VirtualMachineClone{}).
		Owns(&vmsnapshotv1.VirtualMachineRestore{}).
		Watches(&vmsnapshotv1.VirtualMachineSnapshot{}, handler.EnqueueRequestsFromMapFunc(r.clonesOf(clone.VirtualMachineSnapshotKind))).
		Watches(&virtv1.VirtualMachine{}, handler.EnqueueRequestsFromMapFunc(r.clonesOf(clone.VirtualMachineKind))).
		Complete(r)
}

// clonesOf maps an object of kind to the clones that own it, copy it or
// (a VM) make it.
func (r *Reconciler) clonesOf(kind string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var out []reconcile.Request
		if owner := clone.OwnerOf(obj); owner != "" {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: owner}})
		}
		var list clonev1.VirtualMachineCloneList
		if err := r.client.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
			return out
		}
		for _, c := range list.Items {
			src := c.Spec.Source
			copies := src != nil && src.Kind == kind && src.Name == obj.GetName()
			makes := kind == clone.VirtualMachineKind && clone.Target(&c).Name == obj.GetName()
			if copies || makes {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
			}
		}
		return out
	}
}

// outcome is where one pass leaves a clone.
type outcome struct {
	state clone.State
	// why is the Ready reason of a pending or failing clone.
	why string
	// event is the reason of the Warning event of a pending or failing
	// clone.
	event string
}

func pending(event, format string, args ...any) outcome {
	return outcome{state: clone.Pending, why: fmt.Sprintf(format, args...), event: event}
}

func failing(event, format string, args ...any) outcome {
	return outcome{state: clone.Failing, why: fmt.Sprintf(format, args...), event: event}
}

// note is a Normal event the pass recorded, sent once the status that
// goes with it is written: a pass that read a stale clone and loses the
// write says nothing.
type note struct{ reason, msg string }

// waiting is the outcome of a clone that moves on once something it
// made is ready.
func waiting() *outcome { return &outcome{state: clone.Processing} }

// Reconcile takes a clone one step further and writes its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &clonev1.VirtualMachineClone{}
	if err := r.client.Get(ctx, req.NamespacedName, c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if c.DeletionTimestamp != nil || c.Status.Phase == clonev1.Failed {
		return ctrl.Result{}, nil
	}
	if c.Status.Phase == clonev1.Succeeded && c.Status.TargetName != nil && c.Status.RestoreName == nil {
		// Done; as KubeVirt, the clone goes with its target VM.
		err := r.client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: *c.Status.TargetName}, &virtv1.VirtualMachine{})
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, client.IgnoreNotFound(r.client.Delete(ctx, c))
		}
		return ctrl.Result{}, err
	}
	next := c.DeepCopy()
	var notes []note
	out, err := r.step(ctx, next, &notes)
	if err != nil {
		return ctrl.Result{}, err
	}
	now := metav1.NewTime(r.clock.Now().Truncate(time.Second))
	if out.state == clone.Failing {
		next.Status.Phase = clonev1.Failed
	}
	if next.Status.Phase == clonev1.Succeeded {
		out.state = clone.Done
	}
	clone.SetConditions(&next.Status, out.state, out.why, now)
	if !equality.Semantic.DeepEqual(c.Status, next.Status) {
		if err := r.client.Status().Update(ctx, next); err != nil {
			return ctrl.Result{}, err
		}
	}
	for _, n := range notes {
		r.recorder.Eventf(c, corev1.EventTypeNormal, n.reason, "%s", n.msg)
	}
	if out.state == clone.Pending || out.state == clone.Failing {
		r.recorder.Eventf(c, corev1.EventTypeWarning, out.event, "%s", out.why)
	}
	// A pending clone waits for its source, which is watched.
	if out.state == clone.Processing || next.Status.RestoreName != nil {
		return ctrl.Result{RequeueAfter: retryInterval}, nil
	}
	return ctrl.Result{}, nil
}

// step moves c's status on as far as it can go now.
func (r *Reconciler) step(ctx context.Context, c *clonev1.VirtualMachineClone, notes *[]note) (outcome, error) {
	st := &c.Status
	if st.Phase == clonev1.PhaseUnset || st.Phase == clonev1.SnapshotInProgress {
		out, err := r.snapshotStep(ctx, c, notes)
		if err != nil || out != nil {
			return deref(out), err
		}
		st.Phase = clonev1.RestoreInProgress
	}
	if st.Phase == clonev1.RestoreInProgress {
		out, err := r.restoreStep(ctx, c, notes)
		if err != nil || out != nil {
			return deref(out), err
		}
		st.Phase = clonev1.CreatingTargetVM
	}
	if st.Phase == clonev1.CreatingTargetVM {
		err := r.client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: ptr.Deref(st.TargetName, "")}, &virtv1.VirtualMachine{})
		if apierrors.IsNotFound(err) {
			return *waiting(), nil
		} else if err != nil {
			return outcome{}, err
		}
		add(notes, clone.ReasonTargetVMCreated, "created target VM %s for clone %s", *st.TargetName, c.Name)
		st.Phase = clonev1.Succeeded
	}
	if st.Phase == clonev1.Succeeded && st.RestoreName != nil {
		return r.cleanup(ctx, c, notes)
	}
	return *waiting(), nil
}

// deref is o, or waiting when nil.
func deref(o *outcome) outcome {
	if o == nil {
		return *waiting()
	}
	return *o
}

// snapshotStep takes the clone's snapshot of its source VM, or finds the
// snapshot it clones, and checks it is ready and whole. It returns nil
// once it is, or where the clone stands while it is not.
func (r *Reconciler) snapshotStep(ctx context.Context, c *clonev1.VirtualMachineClone, notes *[]note) (*outcome, error) {
	st := &c.Status
	src := c.Spec.Source
	if src == nil {
		o := failing(clone.ReasonSourceDoesNotExist, "spec.source: the clone names no source")
		return &o, nil
	}
	name := src.Name
	if src.Kind == clone.VirtualMachineKind {
		if st.SnapshotName == nil {
			return r.takeSnapshot(ctx, c, notes)
		}
		name = *st.SnapshotName
	}
	s := &vmsnapshotv1.VirtualMachineSnapshot{}
	err := r.client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, s)
	switch {
	case apierrors.IsNotFound(err) && src.Kind == clone.VirtualMachineSnapshotKind:
		o := pending(clone.ReasonSourceDoesNotExist, "source VirtualMachineSnapshot %s/%s does not exist", c.Namespace, name)
		return &o, nil
	case apierrors.IsNotFound(err):
		// Just made: not yet in the cache.
		return waiting(), nil
	case err != nil:
		return nil, err
	}
	if st.Phase == clonev1.PhaseUnset {
		if o, err := r.targetFree(ctx, c); err != nil || o != nil {
			return o, err
		}
		st.Phase = clonev1.SnapshotInProgress
	}
	if s.Status != nil && s.Status.Phase == vmsnapshotv1.Failed {
		msg := "failed"
		if e := s.Status.Error; e != nil && e.Message != nil {
			msg = *e.Message
		}
		o := failing(clone.ReasonSnapshotFailed, "snapshot %s for clone %s failed: %s", s.Name, c.Name, msg)
		return &o, nil
	}
	if !snapshot.Ready(s) {
		return waiting(), nil
	}
	content := &vmsnapshotv1.VirtualMachineSnapshotContent{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: *s.Status.VirtualMachineSnapshotContentName}, content); err != nil {
		return nil, fmt.Errorf("VirtualMachineSnapshotContent %s of snapshot %s: %w", *s.Status.VirtualMachineSnapshotContentName, s.Name, err)
	}
	if err := clone.CheckContent(content); err != nil {
		o := failing(clone.ReasonSnapshotContentInvalid, "%v", err)
		return &o, nil
	}
	add(notes, clone.ReasonSnapshotReady, "snapshot %s for clone %s is ready to use", s.Name, c.Name)
	return nil, nil
}

// takeSnapshot makes the clone's snapshot of its source VM.
func (r *Reconciler) takeSnapshot(ctx context.Context, c *clonev1.VirtualMachineClone, notes *[]note) (*outcome, error) {
	src := c.Spec.Source
	vm := &virtv1.VirtualMachine{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: src.Name}, vm); apierrors.IsNotFound(err) {
		o := pending(clone.ReasonSourceDoesNotExist, "source VirtualMachine %s/%s does not exist", c.Namespace, src.Name)
		return &o, nil
	} else if err != nil {
		return nil, err
	}
	if o, err := r.targetFree(ctx, c); err != nil || o != nil {
		return o, err
	}
	s := clone.Snapshot(c, vm.Name)
	if err := r.client.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating snapshot %s for clone %s: %w", s.Name, c.Name, err)
	} else if err == nil {
		add(notes, clone.ReasonSnapshotCreated, "created snapshot %s for clone %s", s.Name, c.Name)
	}
	c.Status.Phase = clonev1.SnapshotInProgress
	c.Status.SnapshotName = ptr.To(s.Name)
	return waiting(), nil
}

// targetFree fails the clone when its target VM exists already: a clone
// makes a new VM and never writes over one.
func (r *Reconciler) targetFree(ctx context.Context, c *clonev1.VirtualMachineClone) (*outcome, error) {
	t := clone.Target(c)
	err := r.client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: t.Name}, &virtv1.VirtualMachine{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	o := failing(clone.ReasonTargetExists, "spec.target.name: VirtualMachine %s/%s exists: a clone makes a new VirtualMachine", c.Namespace, t.Name)
	return &o, nil
}

// snapshotName is the snapshot c restores.
func snapshotName(c *clonev1.VirtualMachineClone) string {
	if c.Spec.Source.Kind == clone.VirtualMachineSnapshotKind {
		return c.Spec.Source.Name
	}
	return ptr.Deref(c.Status.SnapshotName, "")
}

// restoreStep makes the clone's restore and waits for it to complete. It
// returns nil once it has, or where the clone stands while it has not.
func (r *Reconciler) restoreStep(ctx context.Context, c *clonev1.VirtualMachineClone, notes *[]note) (*outcome, error) {
	st := &c.Status
	if st.RestoreName == nil {
		// A restore this clone made before its status said so is its.
		made := &vmsnapshotv1.VirtualMachineRestore{}
		err := r.client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: clone.RestoreName(c.UID)}, made)
		if err == nil && clone.OwnerOf(made) == c.Name {
			st.RestoreName = ptr.To(made.Name)
			return waiting(), nil
		} else if client.IgnoreNotFound(err) != nil {
			return nil, err
		}
		s := &vmsnapshotv1.VirtualMachineSnapshot{}
		err = r.client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: snapshotName(c)}, s)
		if apierrors.IsNotFound(err) {
			o := failing(clone.ReasonSnapshotDeleted, "snapshot %s does not exist anymore", snapshotName(c))
			return &o, nil
		} else if err != nil {
			return nil, err
		}
		if s.Status == nil || s.Status.VirtualMachineSnapshotContentName == nil {
			o := failing(clone.ReasonSnapshotContentInvalid, "snapshot %s has no content", s.Name)
			return &o, nil
		}
		content := &vmsnapshotv1.VirtualMachineSnapshotContent{}
		if err := r.client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: *s.Status.VirtualMachineSnapshotContentName}, content); err != nil {
			return nil, fmt.Errorf("VirtualMachineSnapshotContent %s of snapshot %s: %w", *s.Status.VirtualMachineSnapshotContentName, s.Name, err)
		}
		if o, err := r.targetFree(ctx, c); err != nil || o != nil {
			return o, err
		}
		src := content.Spec.Source.VirtualMachine
		vm := &virtv1.VirtualMachine{ObjectMeta: src.ObjectMeta, Spec: src.Spec}
		patches, err := clone.Patches(vm, &c.Spec)
		if err != nil {
			o := failing(clone.ReasonRestoreCreationFailed, "error generating patches for clone %s: %v", c.Name, err)
			return &o, nil
		}
		rs := clone.Restore(c, s.Name, patches)
		if err := r.client.Create(ctx, rs); err != nil && !apierrors.IsAlreadyExists(err) {
			r.recorder.Eventf(c, corev1.EventTypeWarning, clone.ReasonRestoreCreationFailed, "failed creating restore %s for clone %s: %v", rs.Name, c.Name, err)
			return nil, fmt.Errorf("creating restore %s for clone %s: %w", rs.Name, c.Name, err)
		} else if err == nil {
			add(notes, clone.ReasonRestoreCreated, "created restore %s for clone %s", rs.Name, c.Name)
		}
		st.RestoreName = ptr.To(rs.Name)
		return waiting(), nil
	}
	rs := &vmsnapshotv1.VirtualMachineRestore{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: *st.RestoreName}, rs); apierrors.IsNotFound(err) {
		// Just made: not yet in the cache.
		return waiting(), nil
	} else if err != nil {
		return nil, err
	}
	if rs.Status != nil {
		for _, cond := range rs.Status.Conditions {
			if cond.Type == vmsnapshotv1.ConditionFailure && cond.Status == corev1.ConditionTrue {
				o := failing(clone.ReasonRestoreFailed, "restore %s for clone %s failed: %s", rs.Name, c.Name, cond.Reason)
				return &o, nil
			}
		}
	}
	if rs.Status == nil || !ptr.Deref(rs.Status.Complete, false) {
		return waiting(), nil
	}
	add(notes, clone.ReasonRestoreReady, "restore %s for clone %s is ready to use", rs.Name, c.Name)
	st.TargetName = ptr.To(rs.Spec.Target.Name)
	return nil, nil
}

// cleanup removes the clone's restore and, for a clone of a VM, its
// snapshot, once the target's claims are bound.
func (r *Reconciler) cleanup(ctx context.Context, c *clonev1.VirtualMachineClone, notes *[]note) (outcome, error) {
	st := &c.Status
	rs := &vmsnapshotv1.VirtualMachineRestore{}
	err := r.client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: *st.RestoreName}, rs)
	if err != nil && !apierrors.IsNotFound(err) {
		return outcome{}, err
	}
	if err == nil && rs.Status != nil {
		for _, v := range rs.Status.Restores {
			pvc := &corev1.PersistentVolumeClaim{}
			if err := r.client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: v.PersistentVolumeClaimName}, pvc); client.IgnoreNotFound(err) != nil {
				return outcome{}, err
			} else if err != nil || pvc.Status.Phase != corev1.ClaimBound {
				return *waiting(), nil
			}
		}
		add(notes, clone.ReasonPVCBound, "all PVC for clone %s are bound", c.Name)
	}
	if err := r.client.Delete(ctx, &vmsnapshotv1.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: *st.RestoreName}}); client.IgnoreNotFound(err) != nil {
		return outcome{}, fmt.Errorf("cleaning up restore %s for clone %s: %w", *st.RestoreName, c.Name, err)
	}
	if c.Spec.Source.Kind == clone.VirtualMachineKind && st.SnapshotName != nil {
		if err := r.client.Delete(ctx, &vmsnapshotv1.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: *st.SnapshotName}}); client.IgnoreNotFound(err) != nil {
			return outcome{}, fmt.Errorf("cleaning up snapshot %s for clone %s: %w", *st.SnapshotName, c.Name, err)
		}
	}
	st.SnapshotName, st.RestoreName = nil, nil
	return outcome{state: clone.Done}, nil
}

// add notes a Normal event of reason.
func add(notes *[]note, reason, format string, args ...any) {
	*notes = append(*notes, note{reason: reason, msg: fmt.Sprintf(format, args...)})
}
