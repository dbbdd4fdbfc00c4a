package handler

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/virtkit/virtkit/controllers/events"
)

// NodeNameField is the VMI field the handler's cache selects on; the VMI
// CRD declares it selectable (deploy/crds).
const NodeNameField = "status.nodeName"

// CacheOptions are the manager cache options of a handler on node: VMIs are
// cached only when their status.nodeName is node (a field selector, so the
// apiserver filters), and nothing else is cached by the handler (it reads
// claims and secrets uncached). Pass them to ctrl.NewManager.
func CacheOptions(node string) cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&virtv1.VirtualMachineInstance{}: {Field: fields.OneTermEqualSelector(NodeNameField, node)},
	}}
}

// SetupWithManager registers the handler with mgr: it watches the VMIs of
// its node (a predicate repeats the node check, for a manager whose cache
// is not limited by CacheOptions) and the domain events of every launcher
// it is connected to, and, once the manager runs, looks at the guests an
// earlier handler left records of.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.client == nil {
		r.client, r.reader = mgr.GetClient(), mgr.GetAPIReader()
	}
	r.recorder = events.OrManager(r.recorder, mgr, "virt-handler")
	if err := mgr.Add(manager.RunnableFunc(r.reviewRecords)); err != nil {
		return err
	}
	onNode := predicate.NewPredicateFuncs(func(o client.Object) bool {
		v, ok := o.(*virtv1.VirtualMachineInstance)
		return ok && v.Status.NodeName == r.cfg.NodeName
	})
	domainEvents := source.TypedChannel(r.events, handler.TypedFuncs[types.NamespacedName, reconcile.Request]{
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[types.NamespacedName], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(reconcile.Request{NamespacedName: e.Object})
		},
	})
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("virt-handler").
		For(&virtv1.VirtualMachineInstance{}, builder.WithPredicates(onNode)).
		WatchesRawSource(domainEvents).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.workers}).
		Complete(r); err != nil {
		return err
	}
	// The target's side of migrations to this node (reconcileTarget):
	// the VMI is not in this node's cache until the target takes it over.
	toNode := predicate.NewPredicateFuncs(func(o client.Object) bool {
		m, ok := o.(*virtv1.VirtualMachineInstanceMigration)
		if !ok {
			return false
		}
		if ms := m.Status.MigrationState; ms != nil && ms.TargetNode == r.cfg.NodeName {
			return true
		}
		return r.targetGuest(client.ObjectKeyFromObject(m)) != nil
	})
	targetEvents := source.TypedChannel(r.targetEvents, handler.TypedFuncs[types.NamespacedName, reconcile.Request]{
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[types.NamespacedName], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(reconcile.Request{NamespacedName: e.Object})
		},
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("virt-handler-migration-target").
		For(&virtv1.VirtualMachineInstanceMigration{}, builder.WithPredicates(toNode)).
		WatchesRawSource(targetEvents).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.workers}).
		Complete(reconcile.Func(r.reconcileTarget))
}

// reviewRecords queues a reconcile for every state record on the node, so
// that the guests of VMIs deleted while no handler ran are stopped too
// (VMIs that still exist are reconciled anyway).
func (r *Reconciler) reviewRecords(ctx context.Context) error {
	recs, err := r.states.List()
	if err != nil {
		r.log.Error(err, "reading the handler's state records")
	}
	for _, rec := range recs {
		select {
		case r.events <- event.TypedGenericEvent[types.NamespacedName]{Object: rec.Key()}:
		case <-ctx.Done():
			return nil
		}
	}
	<-ctx.Done()
	return r.Close()
}

// Close lets go of every guest without stopping any: the connections
// close, the DHCP servers of this process stop, the guests keep running for
// the next handler to adopt. The manager calls it when it stops.
func (r *Reconciler) Close() error {
	rerr := r.ready.close()
	r.mu.Lock()
	r.closed = true
	gs := make([]*guest, 0, len(r.guests)+len(r.targets))
	for _, g := range r.guests {
		gs = append(gs, g)
	}
	for _, g := range r.targets {
		gs = append(gs, g)
	}
	r.guests = map[types.NamespacedName]*guest{}
	r.targets = map[types.NamespacedName]*guest{}
	r.mu.Unlock()
	errs := []error{rerr}
	for _, g := range gs {
		errs = append(errs, g.release())
	}
	return errors.Join(errs...)
}
