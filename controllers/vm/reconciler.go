package vm

import (
	"context"
	"fmt"
	"time"

	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	virtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/controllers/events"
	"github.com/virtkit/virtkit/controllers/stale"
	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virt/spec"
)

// Finalizer is the finalizer KubeVirt's VM controller puts on VMs: the VM is
// not removed before its VMI is deleted.
const Finalizer = virtv1.VirtualMachineControllerFinalizer

// Reconciler is the VirtualMachine controller. Build it with New, then call
// SetupWithManager, or call Reconcile directly with WithClient set.
type Reconciler struct {
	client   client.Client
	reader   client.Reader
	clock    clock.PassiveClock
	recorder EventRecorder
	specOpts []spec.Option
	// specSource, when set, gives the spec options at each VMI's creation.
	specSource SpecOptionsSource
	// rollout gives how template changes reach a running VMI.
	rollout func(ctx context.Context) (Rollout, error)
	backoff Backoff
	// versions are the VM versions this controller's writes replaced;
	// deleted, by VM, the UIDs of the VMIs it deleted, which the cache may
	// still show without a deletion timestamp.
	versions stale.Guard
	deleted  stale.Guard
	workers  int
	// snapshotClasses: the cluster serves VolumeSnapshotClasses, read for
	// the VM's status.volumeSnapshotStatuses.
	snapshotClasses bool
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// WithClient sets the client the reconciler reads (from a cache) and writes
// through, and the uncached reader it checks freshness with before creating a
// VMI. SetupWithManager uses the manager's unless set; tests wrap them to
// count writes.
func WithClient(c client.Client, uncached client.Reader) Option {
	return func(r *Reconciler) { r.client, r.reader = c, uncached }
}

// New returns a VirtualMachine reconciler with opts applied.
func New(opts ...Option) *Reconciler {
	r := defaults()
	for _, o := range opts {
		o(&r)
	}
	return &r
}

// SetupWithManager registers the reconciler with mgr: it watches
// VirtualMachines and the VirtualMachineInstances they control.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.client == nil {
		r.client, r.reader = mgr.GetClient(), mgr.GetAPIReader()
	}
	r.recorder = events.OrManager(r.recorder, mgr, "virtualmachine-controller")
	// Without VolumeSnapshotClasses no volume can be snapshotted.
	r.snapshotClasses, _ = scheme.Served(mgr.GetRESTMapper(), &volumesnapshotv1.VolumeSnapshotClass{})
	return ctrl.NewControllerManagedBy(mgr).
		Named("virtualmachine").
		For(&virtv1.VirtualMachine{}).
		Owns(&virtv1.VirtualMachineInstance{}).
		Watches(&cdiv1.DataVolume{}, handler.EnqueueRequestsFromMapFunc(r.vmsNamingDataVolume)).
		Watches(&k8sv1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(r.vmsNamingClaim)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.workers}).
		Complete(r)
}

// Reconcile brings one VM's VMI in line with its run strategy and requests,
// then writes the VM's status if, and only if, it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vm := &virtv1.VirtualMachine{}
	if err := r.client.Get(ctx, req.NamespacedName, vm); err != nil {
		if apierrors.IsNotFound(err) {
			r.versions.Forget(req.NamespacedName)
			r.deleted.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.versions.Stale(req.NamespacedName, vm.ResourceVersion) {
		// Our own last write is not in the cache yet; its event follows.
		return ctrl.Result{RequeueAfter: stale.RetryAfter}, nil
	}
	vmi, err := r.ownedVMI(ctx, vm)
	if err != nil {
		return ctrl.Result{}, err
	}
	if vm.DeletionTimestamp == nil && !controllerutil.ContainsFinalizer(vm, Finalizer) {
		controllerutil.AddFinalizer(vm, Finalizer)
		if err := r.updateVM(ctx, vm); err != nil {
			return stale.RetryOn(ctx, fmt.Errorf("adding finalizer to VirtualMachine %s: %w", req.NamespacedName, err))
		}
	}

	now := r.clock.Now()
	work := vm.DeepCopy()
	work.Status.StateChangeRequests = pendingRequests(work.Status.StateChangeRequests, vmi)
	if s, err := work.RunStrategy(); err == nil {
		// Count a VMI that failed before it ever ran while it is still seen.
		work.Status.StartFailure = nextStartFailure(work.Status.StartFailure, s, vmi, now, r.backoff)
	}
	plan, planErr := PlanFor(work, vmi, now)
	var syncErr *SyncError
	if planErr != nil {
		// As KubeVirt, reported as FailedCreate; only a spec change helps.
		syncErr = &SyncError{Reason: ReasonFailedCreate, Terminal: true,
			Err: fmt.Errorf("VirtualMachine %s: %w", req.NamespacedName, planErr)}
		if !hasFailure(vm, syncErr) {
			r.recorder.Eventf(vm, k8sv1.EventTypeWarning, ReasonFailedCreate, "Error creating virtual machine instance: %v", syncErr.Err)
		}
	}
	dvs, dvErr := r.syncDataVolumes(ctx, work)
	if dvErr != nil && syncErr == nil {
		syncErr = dvErr
	}
	if plan.Create && (dvErr != nil || !dvs.Ready) {
		// As KubeVirt: the VMI starts once its DataVolumes are filled;
		// their changes wake this VM.
		plan.Create = false
	}
	if plan.Create && (vm.Status.SnapshotInProgress != nil || vm.Status.RestoreInProgress != nil) {
		// As KubeVirt: a stopped VM being snapshotted or restored starts
		// once that is done (the status change wakes it).
		plan.Create = false
	}
	view := vmi
	var liveRestart string
	switch {
	case plan.Create:
		view, syncErr = r.createVMI(ctx, work)
	case plan.Delete:
		view, syncErr = r.deleteVMI(ctx, work, vmi)
	case plan.SetAlways:
		return r.setAlways(ctx, work)
	}
	if !plan.Create && !plan.Delete && syncErr == nil && vm.DeletionTimestamp == nil {
		var retry time.Duration
		retry, syncErr = r.syncVolumeUpdate(ctx, work, vmi)
		if retry > 0 && (plan.RequeueAfter == 0 || retry < plan.RequeueAfter) {
			plan.RequeueAfter = retry
		}
		if syncErr == nil {
			syncErr = r.syncDeclaredHotplug(ctx, work, vmi)
		}
		if syncErr == nil {
			liveRestart, syncErr = r.syncLiveUpdate(ctx, work, vmi)
		}
		if syncErr == nil {
			syncErr = r.syncInterfaces(ctx, work, vmi)
		}
	}
	if plan.AddStartRequest && syncErr == nil {
		work.Status.StateChangeRequests = append(work.Status.StateChangeRequests,
			virtv1.VirtualMachineStateChangeRequest{Action: virtv1.StartRequest})
	}

	if vm.DeletionTimestamp != nil && (view == nil || orphans(vm)) {
		return r.release(ctx, vm)
	}
	next := NextStatus(work, view, syncErr, dvs, now, r.backoff)
	next.VolumeSnapshotStatuses = r.volumeSnapshotStatuses(ctx, work)
	liveRestartRequired(&next, vm.Status.Conditions, liveRestart, metav1.NewTime(now.Truncate(time.Second)))
	if err := r.writeStatus(ctx, vm, next); err != nil {
		return stale.RetryOn(ctx, err)
	}
	if syncErr != nil && syncErr.Terminal {
		return ctrl.Result{}, reconcile.TerminalError(syncErr)
	}
	if syncErr != nil {
		return ctrl.Result{}, syncErr
	}
	return ctrl.Result{RequeueAfter: plan.RequeueAfter}, nil
}

// ownedVMI returns the VMI named after vm if vm controls it, else nil.
func (r *Reconciler) ownedVMI(ctx context.Context, vm *virtv1.VirtualMachine) (*virtv1.VirtualMachineInstance, error) {
	vmi := &virtv1.VirtualMachineInstance{}
	err := r.client.Get(ctx, client.ObjectKeyFromObject(vm), vmi)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("getting VirtualMachineInstance %s/%s: %w", vm.Namespace, vm.Name, err)
	}
	if !controlledBy(vmi, vm.UID) {
		return nil, nil
	}
	if vmi.DeletionTimestamp == nil && r.deleted.Stale(client.ObjectKeyFromObject(vm), string(vmi.UID)) {
		// Deleted by us, and the cache has not seen it yet.
		return deletedView(vmi, r.clock.Now()), nil
	}
	return vmi, nil
}

// updateVM updates vm (metadata and spec) and remembers its old version as stale.
func (r *Reconciler) updateVM(ctx context.Context, vm *virtv1.VirtualMachine) error {
	old := vm.ResourceVersion
	if err := r.client.Update(ctx, vm); err != nil {
		return err
	}
	r.versions.Replaced(client.ObjectKeyFromObject(vm), old, vm.ResourceVersion)
	return nil
}

func controlledBy(vmi *virtv1.VirtualMachineInstance, uid types.UID) bool {
	for _, o := range vmi.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.UID == uid {
			return true
		}
	}
	return false
}

// writeStatus updates vm's status to st unless it is already st. The update
// carries vm's resourceVersion: a VM changed meanwhile fails with a conflict.
func (r *Reconciler) writeStatus(ctx context.Context, vm *virtv1.VirtualMachine, st virtv1.VirtualMachineStatus) error {
	if equality.Semantic.DeepEqual(vm.Status, st) {
		return nil
	}
	upd := vm.DeepCopy()
	upd.Status = st
	if err := r.client.Status().Update(ctx, upd); err != nil {
		return fmt.Errorf("updating status of VirtualMachine %s/%s: %w", vm.Namespace, vm.Name, err)
	}
	r.versions.Replaced(client.ObjectKeyFromObject(vm), vm.ResourceVersion, upd.ResourceVersion)
	logf.FromContext(ctx).V(1).Info("status updated", "printableStatus", st.PrintableStatus, "ready", st.Ready)
	return nil
}

// release removes the finalizer from a VM being deleted once its VMI is gone.
func (r *Reconciler) release(ctx context.Context, vm *virtv1.VirtualMachine) (ctrl.Result, error) {
	if !controllerutil.RemoveFinalizer(vm, Finalizer) {
		return ctrl.Result{}, nil
	}
	if err := r.updateVM(ctx, vm); err != nil && !apierrors.IsNotFound(err) {
		return stale.RetryOn(ctx, fmt.Errorf("removing finalizer from VirtualMachine %s/%s: %w", vm.Namespace, vm.Name, err))
	}
	return ctrl.Result{}, nil
}

// setAlways switches a Halted VM with a start request to Always, keeping the
// field the user chose (runStrategy or the deprecated running).
func (r *Reconciler) setAlways(ctx context.Context, vm *virtv1.VirtualMachine) (ctrl.Result, error) {
	if vm.Spec.RunStrategy != nil {
		always := virtv1.RunStrategyAlways
		vm.Spec.RunStrategy = &always
	} else {
		running := true
		vm.Spec.Running = &running
	}
	if err := r.updateVM(ctx, vm); err != nil {
		return stale.RetryOn(ctx, fmt.Errorf("starting Halted VirtualMachine %s/%s: %w", vm.Namespace, vm.Name, err))
	}
	return ctrl.Result{}, nil
}
