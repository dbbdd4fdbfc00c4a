package workloadupdate

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/controllers/events"
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
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: r.namespace, Name: "workload-update"}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("workload-update").
		Watches(&virtv1.KubeVirt{}, one).
		Watches(&virtv1.VirtualMachineInstanceMigration{}, one).
		Watches(&virtv1.VirtualMachineInstance{}, one, builder.WithPredicates(vmiChanged())).
		Complete(r)
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
				migrate.VolumesChanging(o) != migrate.VolumesChanging(n)
		},
	}
}
