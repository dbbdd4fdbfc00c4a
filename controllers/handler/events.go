package handler

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/virtkit/virtkit/virt/domain"
)

// forward turns a launcher connection's domain events into reconciles of
// the VMI: every event of its domain, and the connection's own (lost,
// restored), after which the reconcile reads the state again. It returns
// when ctx ends or the stream closes (the Manager was closed).
func (r *Reconciler) forward(ctx context.Context, key types.NamespacedName, domainName string, ch <-chan domain.Event) {
	for e := range ch {
		if e.Domain != "" && e.Domain != domainName {
			continue
		}
		r.log.V(1).Info("domain event", "vmi", key.String(), "event", e.String())
		select {
		case r.events <- event.TypedGenericEvent[types.NamespacedName]{Object: key}:
		case <-ctx.Done():
			return
		}
	}
}
