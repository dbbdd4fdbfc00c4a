package clientrate

import (
	"context"
	"time"

	"github.com/go-logr/logr"

	"github.com/virtkit/virtkit/virt/clusterconfig"
)

// DefaultFollowInterval is how often Follow re-reads the CR by default.
const DefaultFollowInterval = 30 * time.Second

// Follower keeps a Limiter at the rate the KubeVirt CR sets for Client. It
// is a controller-runtime Runnable (Start), and needs no leader.
type Follower struct {
	// Reader lists the CR (the manager's API reader: one list per
	// Interval).
	Reader clusterconfig.Lister
	// Namespace holds the CR ("" is clusterconfig.DefaultNamespace).
	Namespace string
	Client    clusterconfig.Client
	Limiter   *Limiter
	// Interval is how often the CR is read; default DefaultFollowInterval.
	Interval time.Duration
	Log      logr.Logger
}

// Sync reads the CR once and sets the rate it says; a failed read keeps the
// rate and returns the error.
func (f Follower) Sync(ctx context.Context) error {
	kv, err := clusterconfig.Get(ctx, f.Reader, f.Namespace)
	if err != nil {
		return err
	}
	r := clusterconfig.ClientRateLimit(kv, f.Client)
	if f.Limiter.Set(r) && f.Log.GetSink() != nil {
		f.Log.Info("client rate limit changed", "client", string(f.Client), "qps", r.QPS, "burst", r.Burst)
	}
	return nil
}

// Start syncs every Interval until ctx ends; failed reads are logged.
func (f Follower) Start(ctx context.Context) error {
	every := f.Interval
	if every <= 0 {
		every = DefaultFollowInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := f.Sync(ctx); err != nil && ctx.Err() == nil && f.Log.GetSink() != nil {
			f.Log.Info("reading the KubeVirt CR for the client rate limit failed; keeping the rate", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// NeedLeaderElection implements controller-runtime's
// LeaderElectionRunnable: every replica limits its own client.
func (Follower) NeedLeaderElection() bool { return false }
