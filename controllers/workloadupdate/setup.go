package workloadupdate

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/controllers/events"
	vmictl "github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/virt/migrate"
)

// SetupWithManager registers the controller with mgr. The KubeVirt CR, the
// migrations, and the VMI changes that make a VMI outdated or not (its
// phase, its launcher image, its migration, its deletion, a volume migration
// asked for or done) all lead to one look at the whole installation.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.client == nil {
		r.client, r.reader = mgr.GetClient(), mgr.GetAPIReader()
	}
	r.recorder = events.OrManager(r.recorder, mgr, "workload-update-controller")
	look := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: r.namespace, Name: "workload-update"}}
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{look}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("workload-update").
		Watches(&virtv1.KubeVirt{}, one).
		Watches(&virtv1.VirtualMachineInstanceMigration{}, one).
		Watches(&virtv1.VirtualMachineInstance{}, batched(look, VMIBatchDelay), builder.WithPredicates(vmiChanged())).
		Complete(r)
}

// VMIBatchDelay is how long the controller lets VMI changes gather before
// it looks at the installation: a look reads every VMI and launcher pod,
// so one look per change would cost the square of the VMIs while many
// start.
const VMIBatchDelay = time.Second

// batched enqueues req delay after an event; events while it waits add
// nothing (a delaying queue keeps an item's earliest time).
func batched(req reconcile.Request, delay time.Duration) handler.Funcs {
	add := func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) { q.AddAfter(req, delay) }
	return handler.Funcs{
		CreateFunc: func(_ context.Context, _ event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q)
		},
		UpdateFunc: func(_ context.Context, _ event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q)
		},
		DeleteFunc: func(_ context.Context, _ event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q)
		},
		GenericFunc: func(_ context.Context, _ event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q)
		},
	}
}

// vmiChanged passes the VMI events that can change a plan.
func vmiChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*virtv1.VirtualMachineInstance)
			n, ok2 := e.ObjectNew.(*virtv1.VirtualMachineInstance)
			if !ok1 || !ok2 {
				return true
			}
			return o.Status.Phase != n.Status.Phase ||
				o.Status.LauncherContainerImageVersion != n.Status.LauncherContainerImageVersion ||
				(o.Status.MigrationState == nil) != (n.Status.MigrationState == nil) ||
				(n.Status.MigrationState != nil && (o.Status.MigrationState.Completed != n.Status.MigrationState.Completed ||
					o.Status.MigrationState.Failed != n.Status.MigrationState.Failed)) ||
				(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
				migrate.VolumesChanging(o) != migrate.VolumesChanging(n) ||
				vmictl.GrowsByMigration(o) != vmictl.GrowsByMigration(n)
		},
	}
}
