package migration

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/controllers/events"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// VMINameField indexes migrations by spec.vmiName in the manager's cache.
const VMINameField = "spec.vmiName"

// SetupWithManager registers the controller with mgr: it watches
// migrations, the VMIs they name, the target pods (kubevirt.io/vmi-name
// labels them) and the attachment pods (their owner VMI annotation), and reconciles one migration at a time (the parallel
// limits are counted, not locked).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.podOpts.LauncherImage == "" && r.podSource == nil {
		return errors.New("migration: WithPodOptions: LauncherImage must be set")
	}
	if r.client == nil {
		r.client, r.reader = mgr.GetClient(), mgr.GetAPIReader()
	}
	r.recorder = events.OrManager(r.recorder, mgr, "migration-controller")
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &virtv1.VirtualMachineInstanceMigration{}, VMINameField,
		func(o client.Object) []string {
			return []string{o.(*virtv1.VirtualMachineInstanceMigration).Spec.VMIName}
		}); err != nil {
		return err
	}
	byVMI := func(ctx context.Context, namespace, name string) []reconcile.Request {
		var list virtv1.VirtualMachineInstanceMigrationList
		if name == "" || r.client.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{VMINameField: name}) != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for _, m := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&m)})
		}
		return out
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("virtualmachineinstancemigration").
		For(&virtv1.VirtualMachineInstanceMigration{}).
		Watches(&virtv1.VirtualMachineInstance{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return byVMI(ctx, o.GetNamespace(), o.GetName())
		})).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			switch {
			case o.GetLabels()[virtv1.MigrationJobLabel] != "":
				return byVMI(ctx, o.GetNamespace(), o.GetLabels()[virtv1.MigrationSelectorLabel])
			case o.GetLabels()[virtv1.AppLabel] == contract.HotplugLabelValue:
				// An attachment pod: a target's, while Scheduled.
				return byVMI(ctx, o.GetNamespace(), o.GetAnnotations()[contract.OwnerVMINameAnnotation])
			}
			return nil
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(r)
}
