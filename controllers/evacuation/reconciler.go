package evacuation

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/virt/clusterconfig"
	"github.com/virtkit/virtkit/virt/migrate"
)

// MigrationGenerateName is the name prefix of evacuation migrations,
// KubeVirt's; they carry virtv1.EvacuationMigrationAnnotation.
const MigrationGenerateName = "kubevirt-evacuation-"

// RetryAfter is how long after a failed evacuation migration the next one
// is created.
const RetryAfter = 5 * time.Second

// Reconciler is the evacuation controller: for every VMI whose
// status.evacuationNodeName is the node it runs on, and whose eviction
// strategy migrates it, it keeps one VirtualMachineInstanceMigration going
// until the VMI runs elsewhere, then clears the field.
type Reconciler struct {
	client    client.Client
	reader    client.Reader
	clock     clock.PassiveClock
	namespace string
}

// New returns the controller; kubevirtNamespace ("" is
// clusterconfig.DefaultNamespace) holds the KubeVirt CR whose
// evictionStrategy is the cluster's default.
func New(kubevirtNamespace string) *Reconciler {
	return &Reconciler{clock: clock.RealClock{}, namespace: clusterconfig.Namespace(kubevirtNamespace)}
}

// SetupWithManager registers the controller with mgr: it watches VMIs, the
// migrations of the VMIs they name, and the taints of Nodes (a change
// wakes the VMIs on the node).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.client, r.reader = mgr.GetClient(), mgr.GetAPIReader()
	taintsChanged := predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return len(e.Object.(*corev1.Node).Spec.Taints) > 0 },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !equality.Semantic.DeepEqual(e.ObjectOld.(*corev1.Node).Spec.Taints, e.ObjectNew.(*corev1.Node).Spec.Taints)
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("evacuation").
		For(&virtv1.VirtualMachineInstance{}).
		Watches(&virtv1.VirtualMachineInstanceMigration{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			m := o.(*virtv1.VirtualMachineInstanceMigration)
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.VMIName}}}
		})).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.vmisOnNode), builder.WithPredicates(taintsChanged)).
		Complete(r)
}

// vmisOnNode are the VMIs the cache has on node o.
func (r *Reconciler) vmisOnNode(ctx context.Context, o client.Object) []reconcile.Request {
	var vmis virtv1.VirtualMachineInstanceList
	if err := r.client.List(ctx, &vmis); err != nil {
		logf.FromContext(ctx).Error(err, "listing VMIs for a node's taints", "node", o.GetName())
		return nil
	}
	var out []reconcile.Request
	for _, v := range vmis.Items {
		if v.Status.NodeName == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&v)})
		}
	}
	return out
}

// Reconcile evacuates one VMI a step further.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vmi := &virtv1.VirtualMachineInstance{}
	if err := r.client.Get(ctx, req.NamespacedName, vmi); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if vmi.IsFinal() || vmi.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	node := vmi.Status.EvacuationNodeName
	log := logf.FromContext(ctx)
	if node != "" && vmi.Status.NodeName != node {
		// It left the drained node: the evacuation is over.
		upd := vmi.DeepCopy()
		upd.Status.EvacuationNodeName = ""
		if err := r.client.Status().Patch(ctx, upd, client.MergeFromWithOptions(vmi, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("VirtualMachineInstance %s: clearing status.evacuationNodeName: %w", req.NamespacedName, err))
		}
		log.Info("VMI evacuated", "from", node, "to", vmi.Status.NodeName)
		return ctrl.Result{}, nil
	}
	// The node it leaves: the one a drain's eviction recorded, or its own
	// when that carries the drain taint.
	source := node
	var tainted *corev1.Node
	if source == "" {
		if vmi.Status.Phase != virtv1.Running || vmi.Status.NodeName == "" {
			return ctrl.Result{}, nil
		}
		n := &corev1.Node{}
		err := r.client.Get(ctx, client.ObjectKey{Name: vmi.Status.NodeName}, n)
		if client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
		if apierrors.IsNotFound(err) || !migrate.MayHaveDrainTaint(n) {
			return ctrl.Result{}, r.stopEvacuations(ctx, vmi)
		}
		source, tainted = n.Name, n
	}
	kv, err := clusterconfig.Get(ctx, r.reader, r.namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	strategy := migrate.EvictionStrategy(vmi, migrate.ClusterEvictionStrategy(kv))
	if tainted != nil {
		cfg, err := migrate.ClusterConfig(clusterconfig.Migrations(kv))
		if err != nil {
			return ctrl.Result{}, err
		}
		if !migrate.DrainTainted(tainted, cfg.NodeDrainTaintKey) || !migrate.LeavesDrainTaintedNode(vmi, strategy) {
			return ctrl.Result{}, r.stopEvacuations(ctx, vmi)
		}
	} else if strategy != virtv1.EvictionStrategyLiveMigrate && strategy != virtv1.EvictionStrategyLiveMigrateIfPossible {
		return ctrl.Result{}, nil // External: another controller's; None: nothing to do
	}
	var migs virtv1.VirtualMachineInstanceMigrationList
	// Uncached: a migration created by the last reconcile must be seen.
	if err := r.reader.List(ctx, &migs, client.InNamespace(vmi.Namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("VirtualMachineInstance %s: listing migrations: %w", req.NamespacedName, err)
	}
	var lastFailed time.Time
	for _, m := range migs.Items {
		if m.Spec.VMIName != vmi.Name {
			continue
		}
		if !m.IsFinal() {
			return ctrl.Result{}, nil // one runs (an evacuation's or a user's)
		}
		if _, ours := m.Annotations[virtv1.EvacuationMigrationAnnotation]; ours && m.Status.Phase == virtv1.MigrationFailed {
			for _, t := range m.Status.PhaseTransitionTimestamps {
				if t.Phase == virtv1.MigrationFailed && t.PhaseTransitionTimestamp.After(lastFailed) {
					lastFailed = t.PhaseTransitionTimestamp.Time
				}
			}
		}
	}
	if wait := lastFailed.Add(RetryAfter).Sub(r.clock.Now()); !lastFailed.IsZero() && wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	// The VMI as it is now, not as the cache last saw it: a migration that
	// just succeeded has moved it already.
	fresh := &virtv1.VirtualMachineInstance{}
	if err := r.reader.Get(ctx, req.NamespacedName, fresh); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if fresh.UID != vmi.UID || fresh.Status.NodeName != source || fresh.Status.EvacuationNodeName != node {
		return ctrl.Result{RequeueAfter: 200 * time.Millisecond}, nil
	}
	mig := &virtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: MigrationGenerateName, Namespace: vmi.Namespace,
			Annotations: map[string]string{virtv1.EvacuationMigrationAnnotation: source}},
		Spec: virtv1.VirtualMachineInstanceMigrationSpec{VMIName: vmi.Name},
	}
	if err := r.client.Create(ctx, mig); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return ctrl.Result{RequeueAfter: 200 * time.Millisecond}, nil
		}
		return ctrl.Result{}, fmt.Errorf("VirtualMachineInstance %s: creating its evacuation migration: %w", req.NamespacedName, err)
	}
	log.Info("evacuation migration created", "migration", mig.Name, "from", source, "drainTaint", tainted != nil)
	return ctrl.Result{}, nil
}

// stopEvacuations cancels (deletes, as migrate-cancel does) the evacuation
// migrations of vmi that are not over while it still runs on the node
// they evacuate, once nothing asks for the evacuation any more: its mark
// was cleared (evacuate-cancel) and its node has no drain taint. A
// migration that already moved it is left alone.
func (r *Reconciler) stopEvacuations(ctx context.Context, vmi *virtv1.VirtualMachineInstance) error {
	var migs virtv1.VirtualMachineInstanceMigrationList
	if err := r.client.List(ctx, &migs, client.InNamespace(vmi.Namespace)); err != nil {
		return fmt.Errorf("VirtualMachineInstance %s/%s: listing migrations: %w", vmi.Namespace, vmi.Name, err)
	}
	for i := range migs.Items {
		m := &migs.Items[i]
		from, ours := m.Annotations[virtv1.EvacuationMigrationAnnotation]
		if !ours || m.Spec.VMIName != vmi.Name || m.IsFinal() || m.DeletionTimestamp != nil || from != vmi.Status.NodeName {
			continue
		}
		if err := r.client.Delete(ctx, m, client.Preconditions{UID: &m.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("VirtualMachineInstance %s/%s: cancelling evacuation migration %s: %w", vmi.Namespace, vmi.Name, m.Name, err)
		}
		logf.FromContext(ctx).Info("evacuation cancelled", "migration", m.Name, "node", from)
	}
	return nil
}
