package handler

import (
	"context"

	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/virt/domain"
)

var _ metrics.GuestLister = (*Reconciler)(nil)

// Guests lists the guests the handler runs now, for metrics.DomainStats:
// each one's counters are read from its launcher's libvirt when Prometheus
// scrapes, its disks labelled with their volumes and its NICs with their
// interfaces and networks, from the plans it was started with. Register
// metrics.NewDomainStats over the handler into the registry the daemon
// serves.
func (r *Reconciler) Guests() []metrics.Guest {
	r.mu.Lock()
	gs := make([]*guest, 0, len(r.guests))
	for _, g := range r.guests {
		gs = append(gs, g)
	}
	r.mu.Unlock()
	out := make([]metrics.Guest, 0, len(gs))
	for _, g := range gs {
		// A registered guest's connection, domain name and plans do not
		// change (see guest): they are read without the reconcile's lock.
		dom, name := g.dom, g.domain
		mg := metrics.Guest{
			Namespace: g.key.Namespace, Name: g.key.Name, Node: r.cfg.NodeName,
			Stats:      func(ctx context.Context) (*domain.Stats, error) { return dom.Stats(ctx, name) },
			Drives:     map[string]string{},
			Interfaces: map[string]metrics.GuestInterface{},
		}
		if g.machine != nil {
			for vol, p := range g.machine.StoragePlan {
				mg.Drives[p.Path] = vol
			}
			for _, p := range g.machine.NetworkPlan {
				mg.Interfaces[p.TapName] = metrics.GuestInterface{Interface: p.Interface, Network: p.Network}
			}
		}
		out = append(out, mg)
	}
	return out
}
