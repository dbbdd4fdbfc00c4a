package vmi

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
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// Reconciler is the VirtualMachineInstance controller. Build it with New,
// then call SetupWithManager, or call Reconcile directly with WithClient set.
type Reconciler struct {
	client  client.Client
	reader  client.Reader
	clock   clock.PassiveClock
	podOpts PodOptions
	// podSource, when set, gives the pod options at each rendering.
	podSource PodOptionsSource
	recorder  EventRecorder
	versions  stale.Guard // VMI versions this controller's writes replaced
	// schedulingGrace: see WithSchedulingGrace.
	schedulingGrace time.Duration
	workers         int
	// podIndex: r.client is the manager's cache, indexed by podsByVMI.
	podIndex bool
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// New returns a VirtualMachineInstance reconciler with opts applied.
func New(opts ...Option) *Reconciler {
	r := &Reconciler{clock: clock.RealClock{}, recorder: events.Discard(), schedulingGrace: DefaultSchedulingGrace, workers: DefaultWorkers}
	for _, o := range opts {
		o(r)
	}
	return r
}

// SetupWithManager registers the reconciler with mgr: it watches
// VirtualMachineInstances and the pods they control.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.podOpts.LauncherImage == "" && r.podSource == nil {
		return errors.New("vmi: WithPodOptions: LauncherImage must be set")
	}
	if r.client == nil {
		r.client, r.reader = mgr.GetClient(), mgr.GetAPIReader()
		// The manager's cache finds a VMI's pods by index, not by
		// matching the label of every pod in the namespace.
		if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, podsByVMI, createdBy); err != nil {
			return fmt.Errorf("vmi: indexing pods by %s: %w", virtv1.CreatedByLabel, err)
		}
		r.podIndex = true
	}
	r.recorder = events.OrManager(r.recorder, mgr, "virtualmachineinstance-controller")
	return ctrl.NewControllerManagedBy(mgr).
		Named("virtualmachineinstance").
		For(&virtv1.VirtualMachineInstance{}).
		Owns(&corev1.Pod{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(attachPodVMI)).
		Watches(&cdiv1.DataVolume{}, handler.EnqueueRequestsFromMapFunc(r.vmisNamingDataVolume)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.workers}).
		Complete(r)
}

// Reconcile creates, follows and deletes one VMI's launcher pod and writes
// the VMI's status if, and only if, it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vmi := &virtv1.VirtualMachineInstance{}
	if err := r.client.Get(ctx, req.NamespacedName, vmi); err != nil {
		if apierrors.IsNotFound(err) {
			r.versions.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.versions.Stale(req.NamespacedName, vmi.ResourceVersion) {
		return ctrl.Result{RequeueAfter: stale.RetryAfter}, nil
	}
	pod, err := r.launcherPod(ctx, vmi)
	if err != nil {
		return ctrl.Result{}, err
	}
	plan := PlanFor(vmi, pod)

	if plan.AddFinalizer {
		controllerutil.AddFinalizer(vmi, Finalizer)
		if err := r.update(ctx, vmi); err != nil {
			return stale.RetryOn(ctx, fmt.Errorf("adding finalizer to VirtualMachineInstance %s: %w", req.NamespacedName, err))
		}
	}
	ready, waiting, dvs, err := r.dataVolumesReady(ctx, vmi)
	if err != nil {
		return ctrl.Result{}, err
	}
	// As KubeVirt: the pod waits while a DataVolume is filled or a claim
	// is yet to appear; their changes wake the VMI. While a DataVolume
	// waits for its first consumer, a provisioning pod binds its claim.
	provisioning := plan.CreatePod && !ready && waiting
	plan.CreatePod = plan.CreatePod && ready
	var temp *corev1.Pod
	if provisioning || mayHaveProvisioningPods(vmi) {
		if temp, err = r.syncProvisioningPods(ctx, vmi, provisioning); err != nil {
			return ctrl.Result{}, err
		}
	}
	var createErr error
	if plan.CreatePod {
		pod, createErr = r.createPod(ctx, vmi, RenderPod)
		if createErr != nil {
			logf.FromContext(ctx).Error(createErr, "creating launcher pod")
			r.recorder.Eventf(vmi, corev1.EventTypeWarning, ReasonFailedCreate, "Error creating pod: %v", createErr)
		} else {
			r.recorder.Eventf(vmi, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created virtual machine pod %s", pod.Name)
		}
	}
	if plan.DeletePod {
		if err := r.client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); client.IgnoreNotFound(err) != nil {
			r.recorder.Eventf(vmi, corev1.EventTypeWarning, ReasonFailedDelete, "Error deleting pod %s: %v", pod.Name, err)
			return ctrl.Result{}, fmt.Errorf("deleting launcher pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		r.recorder.Eventf(vmi, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted virtual machine pod %s", pod.Name)
	}
	if plan.RemoveFinalizer {
		controllerutil.RemoveFinalizer(vmi, Finalizer)
		if err := r.update(ctx, vmi); client.IgnoreNotFound(err) != nil {
			return stale.RetryOn(ctx, fmt.Errorf("removing finalizer from VirtualMachineInstance %s: %w", req.NamespacedName, err))
		}
		return ctrl.Result{}, nil
	}

	if err := r.syncAttachPods(ctx, vmi, pod); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.syncPodNetworks(ctx, vmi, pod); err != nil {
		return ctrl.Result{}, err
	}

	now := r.clock.Now()
	next := NextStatus(vmi, pod, createErr, now)
	if vmi.DeletionTimestamp == nil && !vmi.IsFinal() {
		SetDataVolumesCondition(&next, dvs, metav1.NewTime(now.Truncate(time.Second)))
		SyncProvisioning(&next, provisioning, temp, metav1.NewTime(now.Truncate(time.Second)))
	}
	if hold := HoldScheduling(&vmi.Status, &next, pod, r.schedulingGrace, now); hold > 0 {
		// The pod's bind, likely within the grace, writes Scheduled in one go.
		return ctrl.Result{RequeueAfter: hold}, nil
	}
	if err := r.writeStatus(ctx, vmi, next); err != nil {
		return stale.RetryOn(ctx, err)
	}
	if createErr != nil {
		if errors.Is(createErr, ErrInvalidVMI) {
			return ctrl.Result{}, reconcile.TerminalError(createErr)
		}
		return ctrl.Result{}, createErr
	}
	return ctrl.Result{}, nil
}

// launcherPod returns the VMI's launcher pod, nil when there is none. A pod
// missing from the cache is looked up on the apiserver when its absence
// would make this reconcile create a pod, fail the VMI or release it.
func (r *Reconciler) launcherPod(ctx context.Context, vmi *virtv1.VirtualMachineInstance) (*corev1.Pod, error) {
	sel := client.ListOption(client.MatchingLabels{virtv1.CreatedByLabel: string(vmi.UID)})
	if r.podIndex {
		sel = client.MatchingFields{podsByVMI: string(vmi.UID)}
	}
	pod, err := findPod(ctx, r.client, vmi, sel)
	if err != nil || pod != nil || (vmi.IsFinal() && vmi.DeletionTimestamp == nil) {
		return pod, err
	}
	return findPod(ctx, r.reader, vmi, client.MatchingLabels{virtv1.CreatedByLabel: string(vmi.UID)})
}

// attachPodVMI maps an attachment pod to its VMI (its annotation; the pod
// is controlled by the launcher pod, so Owns does not see it).
func attachPodVMI(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetAnnotations()[contract.OwnerVMINameAnnotation]
	if o.GetLabels()[virtv1.AppLabel] != contract.HotplugLabelValue || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// podsByVMI names the cache's index of pods by the UID of the VMI that
// created them (createdBy).
const podsByVMI = "vmi.virtkit.io/created-by"

// createdBy is a pod's key in podsByVMI: a launcher pod's
// kubevirt.io/created-by label, an attachment pod's owner VMI annotation.
func createdBy(o client.Object) []string {
	if uid := o.GetLabels()[virtv1.CreatedByLabel]; uid != "" {
		return []string{uid}
	}
	if o.GetLabels()[virtv1.AppLabel] == contract.HotplugLabelValue {
		if uid := o.GetAnnotations()[contract.OwnerVMIUIDAnnotation]; uid != "" {
			return []string{uid}
		}
	}
	return nil
}

// findPod lists the pods sel picks among vmi's (the created-by label, or
// its index in the cache), keeps those vmi controls and picks its current
// launcher pod (IsCurrentPod), the live one first.
func findPod(ctx context.Context, rd client.Reader, vmi *virtv1.VirtualMachineInstance, sel client.ListOption) (*corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := rd.List(ctx, pods, client.InNamespace(vmi.Namespace), sel); err != nil {
		return nil, fmt.Errorf("listing launcher pods of VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	var found *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if controllerUID(p) != vmi.UID || !IsCurrentPod(vmi, p) {
			continue
		}
		if found == nil || (found.DeletionTimestamp != nil && p.DeletionTimestamp == nil) {
			found = p
		}
	}
	return found, nil
}

// IsCurrentPod reports whether pod, one of vmi's launcher pods, is the one
// that holds (or is to hold) its guest. A migration's target pod becomes
// current once the migration completed and the target's handler took the
// VMI over (status.nodeName is the pod's node); until then it is
// controllers/migration's. A pod on another node than status.nodeName is
// the source of a completed migration: it ends on its own, and its end is
// not the VMI's. A provisioning pod (IsProvisioningPod) never holds the
// guest.
func IsCurrentPod(vmi *virtv1.VirtualMachineInstance, pod *corev1.Pod) bool {
	if IsProvisioningPod(pod) {
		return false
	}
	node := vmi.Status.NodeName
	if IsTargetPod(pod) {
		ms := vmi.Status.MigrationState
		if ms != nil && string(ms.MigrationUID) == pod.Labels[virtv1.MigrationJobLabel] && !(ms.Completed && !ms.Failed) {
			return false // its migration runs, or failed
		}
		return node != "" && pod.Spec.NodeName == node
	}
	return node == "" || pod.Spec.NodeName == "" || pod.Spec.NodeName == node
}

func controllerUID(p *corev1.Pod) types.UID {
	for _, o := range p.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind == "VirtualMachineInstance" {
			return o.UID
		}
	}
	return ""
}

// podOptions are the options of a pod rendered now.
func (r *Reconciler) podOptions(ctx context.Context) (PodOptions, error) {
	if r.podSource == nil {
		return r.podOpts, nil
	}
	o, err := r.podSource(ctx)
	if err != nil {
		return PodOptions{}, fmt.Errorf("launcher pod options: %w", err)
	}
	return o, nil
}

// createPod renders (RenderPod, or RenderProvisioningPod) and creates a
// pod of vmi.
func (r *Reconciler) createPod(ctx context.Context, vmi *virtv1.VirtualMachineInstance, render func(*virtv1.VirtualMachineInstance, PodOptions) (*corev1.Pod, error)) (*corev1.Pod, error) {
	opts, err := r.podOptions(ctx)
	if err != nil {
		return nil, err
	}
	if opts.StateClaim, err = r.stateClaim(ctx, vmi, opts); err != nil {
		return nil, err
	}
	if opts.BlockVolumes, err = BlockVolumes(ctx, r.client, vmi); err != nil {
		return nil, err
	}
	pod, err := render(vmi, opts)
	if err != nil {
		return nil, err
	}
	if err := r.client.Create(ctx, pod); err != nil {
		return nil, fmt.Errorf("creating pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	logf.FromContext(ctx).V(1).Info("pod created", "pod", pod.Name, "provisioning", IsProvisioningPod(pod))
	return pod, nil
}

// update updates vmi's metadata and spec and remembers its old version as stale.
func (r *Reconciler) update(ctx context.Context, vmi *virtv1.VirtualMachineInstance) error {
	old := vmi.ResourceVersion
	if err := r.client.Update(ctx, vmi); err != nil {
		return err
	}
	r.versions.Replaced(client.ObjectKeyFromObject(vmi), old, vmi.ResourceVersion)
	return nil
}

// writeStatus updates vmi's status to st unless it is already st.
func (r *Reconciler) writeStatus(ctx context.Context, vmi *virtv1.VirtualMachineInstance, st virtv1.VirtualMachineInstanceStatus) error {
	if equality.Semantic.DeepEqual(vmi.Status, st) {
		return nil
	}
	upd := vmi.DeepCopy()
	upd.Status = st
	if err := r.client.Status().Update(ctx, upd); err != nil {
		return fmt.Errorf("updating status of VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	r.versions.Replaced(client.ObjectKeyFromObject(vmi), vmi.ResourceVersion, upd.ResourceVersion)
	r.warn(vmi, st)
	logf.FromContext(ctx).V(1).Info("status updated", "phase", st.Phase, "reason", st.Reason)
	return nil
}
