package evacuation

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
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

// SetupWithManager registers the controller with mgr: it watches VMIs and
// the migrations of the VMIs they name.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.client, r.reader = mgr.GetClient(), mgr.GetAPIReader()
	return ctrl.NewControllerManagedBy(mgr).
		Named("evacuation").
		For(&virtv1.VirtualMachineInstance{}).
		Watches(&virtv1.VirtualMachineInstanceMigration{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			m := o.(*virtv1.VirtualMachineInstanceMigration)
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.VMIName}}}
		})).
		Complete(r)
}

// Reconcile evacuates one VMI a step further.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vmi := &virtv1.VirtualMachineInstance{}
	if err := r.client.Get(ctx, req.NamespacedName, vmi); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	node := vmi.Status.EvacuationNodeName
	if node == "" || vmi.IsFinal() || vmi.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	log := logf.FromContext(ctx)
	if vmi.Status.NodeName != node {
		// It left the drained node: the evacuation is over.
		upd := vmi.DeepCopy()
		upd.Status.EvacuationNodeName = ""
		if err := r.client.Status().Patch(ctx, upd, client.MergeFromWithOptions(vmi, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("VirtualMachineInstance %s: clearing status.evacuationNodeName: %w", req.NamespacedName, err))
		}
		log.Info("VMI evacuated", "from", node, "to", vmi.Status.NodeName)
		return ctrl.Result{}, nil
	}
	kv, err := clusterconfig.Get(ctx, r.reader, r.namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	if s := migrate.EvictionStrategy(vmi, migrate.ClusterEvictionStrategy(kv)); s != virtv1.EvictionStrategyLiveMigrate && s != virtv1.EvictionStrategyLiveMigrateIfPossible {
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
	if fresh.UID != vmi.UID || fresh.Status.NodeName != node || fresh.Status.EvacuationNodeName != node {
		return ctrl.Result{RequeueAfter: 200 * time.Millisecond}, nil
	}
	mig := &virtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: MigrationGenerateName, Namespace: vmi.Namespace,
			Annotations: map[string]string{virtv1.EvacuationMigrationAnnotation: node}},
		Spec: virtv1.VirtualMachineInstanceMigrationSpec{VMIName: vmi.Name},
	}
	if err := r.client.Create(ctx, mig); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return ctrl.Result{RequeueAfter: 200 * time.Millisecond}, nil
		}
		return ctrl.Result{}, fmt.Errorf("VirtualMachineInstance %s: creating its evacuation migration: %w", req.NamespacedName, err)
	}
	log.Info("evacuation migration created", "migration", mig.Name, "from", node)
	return ctrl.Result{}, nil
}
