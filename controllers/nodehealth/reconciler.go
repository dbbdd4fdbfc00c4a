package nodehealth

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/controllers/events"
	vmictl "github.com/virtkit/virtkit/controllers/vmi"
)

// ReasonNodeUnresponsive is KubeVirt's reason: the VMI's status.reason, its
// Ready condition's, and the events'.
const ReasonNodeUnresponsive = "NodeUnresponsive"

// Reconciler is the node controller; requests are Node names.
type Reconciler struct {
	client   client.Client
	clock    clock.PassiveClock
	recorder events.Recorder
	opts     Options
}

// Option changes a Reconciler.
type Option func(*Reconciler)

// WithOptions sets the timings; zero fields keep their defaults.
func WithOptions(o Options) Option { return func(r *Reconciler) { r.opts = o } }

// WithClock sets the clock the heartbeats and grace periods are judged by.
func WithClock(c clock.PassiveClock) Option { return func(r *Reconciler) { r.clock = c } }

// WithClient sets the client (SetupWithManager uses the manager's otherwise).
func WithClient(c client.Client) Option { return func(r *Reconciler) { r.client = c } }

// WithEventRecorder sets where the NodeUnresponsive events go
// (SetupWithManager uses the manager's otherwise).
func WithEventRecorder(rec events.Recorder) Option { return func(r *Reconciler) { r.recorder = rec } }

// New returns the controller.
func New(opts ...Option) *Reconciler {
	r := &Reconciler{clock: clock.RealClock{}}
	for _, o := range opts {
		o(r)
	}
	r.opts = r.opts.withDefaults()
	return r
}

// SetupWithManager registers the controller with mgr: it watches Nodes,
// and VMIs for the node they run on.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.client == nil {
		r.client = mgr.GetClient()
	}
	r.recorder = events.OrManager(r.recorder, mgr, "virt-controller")
	return ctrl.NewControllerManagedBy(mgr).
		Named("nodehealth").
		For(&corev1.Node{}).
		Watches(&virtv1.VirtualMachineInstance{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if n := o.(*virtv1.VirtualMachineInstance).Status.NodeName; n != "" {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: n}}}
			}
			return nil
		})).
		Complete(r)
}

// Reconcile looks at one node and its VMIs.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	node := &corev1.Node{}
	if err := r.client.Get(ctx, req.NamespacedName, node); apierrors.IsNotFound(err) {
		node = nil
	} else if err != nil {
		return ctrl.Result{}, err
	}
	now := r.clock.Now()
	h := Assess(node, now, r.opts)
	var result ctrl.Result
	if !h.Next.IsZero() {
		result.RequeueAfter = max(h.Next.Sub(now), time.Second)
	}
	if !h.Unresponsive {
		return result, nil
	}
	if node != nil && node.Labels[virtv1.NodeSchedulable] == "true" {
		if err := r.markUnschedulable(ctx, node); err != nil {
			return ctrl.Result{}, err
		}
	}
	var vmis virtv1.VirtualMachineInstanceList
	if err := r.client.List(ctx, &vmis); err != nil {
		return ctrl.Result{}, fmt.Errorf("node %s: listing VMIs: %w", req.Name, err)
	}
	var errs []error
	for i := range vmis.Items {
		v := &vmis.Items[i]
		// A final VMI of a down node may still have pods there to remove.
		if v.Status.NodeName != req.Name || (v.IsFinal() && !h.Down) {
			continue
		}
		if err := r.handle(ctx, v, h); err != nil {
			errs = append(errs, err)
		}
	}
	return result, errors.Join(errs...)
}

// handle applies Plan to one VMI of an unresponsive node.
func (r *Reconciler) handle(ctx context.Context, v *virtv1.VirtualMachineInstance, h Health) error {
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(v.Namespace), client.MatchingLabels{virtv1.CreatedByLabel: string(v.UID)}); err != nil {
		return fmt.Errorf("VirtualMachineInstance %s/%s: listing its launcher pods: %w", v.Namespace, v.Name, err)
	}
	alive := false
	for i := range pods.Items {
		if pods.Items[i].Spec.NodeName == v.Status.NodeName && LauncherAlive(&pods.Items[i]) {
			alive = true
		}
	}
	a := Plan(h, alive)
	// Failed first, then the pods: a VMI whose pod went first would fail
	// for that instead (PodNotExists), hiding the node's failure.
	if a.Fail && !v.IsFinal() {
		msg := fmt.Sprintf("virt-handler on node %s is not responsive, marking VMI as failed", v.Status.NodeName)
		upd := v.DeepCopy()
		vmictl.Fail(&upd.Status, ReasonNodeUnresponsive, msg, metav1.NewTime(r.clock.Now().Truncate(time.Second)))
		if err := r.client.Status().Patch(ctx, upd, client.MergeFromWithOptions(v, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("VirtualMachineInstance %s/%s: failing it: %w", v.Namespace, v.Name, err)
		}
		r.recorder.Eventf(v, corev1.EventTypeNormal, ReasonNodeUnresponsive, "%s", msg)
		logf.FromContext(ctx).Info("VMI failed: its node's handler is not responsive", "vmi", v.Namespace+"/"+v.Name, "node", v.Status.NodeName)
	}
	if a.ForceDeletePods {
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.NodeName != v.Status.NodeName {
				continue // a migration's pod elsewhere is not the node's
			}
			if err := r.client.Delete(ctx, p, client.GracePeriodSeconds(0), client.Preconditions{UID: &p.UID}); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("VirtualMachineInstance %s/%s: deleting launcher pod %s of down node %s: %w", v.Namespace, v.Name, p.Name, v.Status.NodeName, err)
			}
		}
	}
	return nil
}

// markUnschedulable sets the node's kubevirt.io/schedulable label to false.
func (r *Reconciler) markUnschedulable(ctx context.Context, node *corev1.Node) error {
	patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:"false"}}}`, virtv1.NodeSchedulable))
	if err := r.client.Patch(ctx, node, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("node %s: marking it unschedulable: %w", node.Name, err)
	}
	r.recorder.Eventf(node, corev1.EventTypeNormal, ReasonNodeUnresponsive, "virt-handler is not responsive, marking node as unresponsive")
	return nil
}
