package handler

import (
	"context"
	"fmt"

	"github.com/virtkit/virtkit/virt/clusterconfig"
)

// emulation reports whether a guest starting now runs under software
// emulation (TCG): always on a node whose Config.Emulation says so, and
// otherwise as the KubeVirt CR's developerConfiguration.useEmulation says
// at this moment (clusterconfig.UseEmulation), read uncached, so that a
// change of the CR reaches the next guest the handler starts without a
// restart, as in KubeVirt. Guests already running keep their domain type.
func (r *Reconciler) emulation(ctx context.Context) (bool, error) {
	if r.cfg.Emulation {
		return true, nil
	}
	kv, err := clusterconfig.Get(ctx, r.reader, r.cfg.KubeVirtNamespace)
	if err != nil {
		return false, fmt.Errorf("useEmulation: %w", err)
	}
	return clusterconfig.UseEmulation(kv), nil
}
