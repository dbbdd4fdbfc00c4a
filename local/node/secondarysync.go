package node

import (
	"context"
	"time"

	"github.com/virtkit/virtkit/virt/network"
)

// SecondarySyncer is a Network that also changes the secondary networks of
// a pod whose network is up, as Multus's dynamic networks controller does
// when the pod's annotation changes (interface hotplug and unplug). [CNI]
// is one; a Network that is not keeps a running pod's networks as they
// were set up.
type SecondarySyncer interface {
	SyncSecondary(ctx context.Context, pod PodNetwork) error
}

// secondaryRetries bounds how often a failed change of a running pod's
// secondary networks is tried again, a second apart, before the node waits
// for the next change of the annotation.
const secondaryRetries = 5

// annotationChanged starts syncSecondary when the pod's network is up and
// its Multus annotation changed from before.
func (r *podRun) annotationChanged(before string) {
	r.mu.Lock()
	now, up := r.pod.Annotations[network.MultusNetworksAnnotation], r.facts.SandboxReady && r.att.NetNS != ""
	r.mu.Unlock()
	if now == before || !up {
		return
	}
	if _, ok := r.p.opts.network.(SecondarySyncer); !ok {
		r.log.Info("the node's network cannot change a running pod's secondary networks; the change waits for a new pod")
		return
	}
	go r.syncSecondary(r.p.ctx)
}

// syncSecondary brings the running pod's secondary networks in line with
// its annotation, one change at a time (netMu also keeps teardown out).
func (r *podRun) syncSecondary(ctx context.Context) {
	r.netMu.Lock()
	defer r.netMu.Unlock()
	syncer := r.p.opts.network.(SecondarySyncer)
	for try := 1; ; try++ {
		r.mu.Lock()
		value, stopping := r.pod.Annotations[network.MultusNetworksAnnotation], r.stopping
		r.mu.Unlock()
		if stopping {
			return
		}
		err := r.applySecondary(ctx, syncer, value)
		if err == nil {
			r.log.Info("secondary networks changed", "networks", value)
			return
		}
		r.log.Error(err, "changing the pod's secondary networks", "try", try)
		if try == secondaryRetries || !r.sleep(time.Second) {
			return
		}
	}
}

func (r *podRun) applySecondary(ctx context.Context, syncer SecondarySyncer, value string) error {
	sel, err := ParseMultusNetworks(value, r.namespace)
	if err != nil {
		return err
	}
	pn := r.podNetwork()
	if pn.Secondary, err = resolveMultus(ctx, r.p.client, sel); err != nil {
		return err
	}
	return syncer.SyncSecondary(ctx, pn)
}
