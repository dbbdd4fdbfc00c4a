package handler

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/virtkit/virtkit/virt/domain"
)

// forward turns a launcher connection's domain events into reconciles of
// g's VMI: every event of its domain, and the connection's own (lost,
// restored), after which the reconcile reads the state again. While g is a
// migration's target not yet taken over, they go to that migration's
// reconcile instead. It returns when ctx ends or the stream closes (the
// Manager was closed).
func (r *Reconciler) forward(ctx context.Context, g *guest, ch <-chan domain.Event) {
	for e := range ch {
		if e.Domain != "" && e.Domain != g.domain {
			continue
		}
		key, sink := g.key, r.events
		if mig := g.target.Load(); mig != nil {
			key, sink = *mig, r.targetEvents
		}
		r.log.V(1).Info("domain event", "key", key.String(), "event", e.String())
		select {
		case sink <- event.TypedGenericEvent[types.NamespacedName]{Object: key}:
		case <-ctx.Done():
			return
		}
	}
}
