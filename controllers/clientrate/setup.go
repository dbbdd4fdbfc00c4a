package clientrate

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virt/clusterconfig"
)

// Setup is how a daemon limits its client: it reads the KubeVirt CR of
// namespace once, with cfg's own rate, and returns cfg limited at the rate
// the CR sets for c, and the Follower that keeps it there (add it to the
// manager, or Start it).
func Setup(ctx context.Context, cfg *rest.Config, namespace string, c clusterconfig.Client, log logr.Logger) (*rest.Config, Follower, error) {
	reader, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, Follower{}, fmt.Errorf("clientrate: %w", err)
	}
	l := NewLimiter(clusterconfig.DefaultRateLimit(c))
	f := Follower{Reader: reader, Namespace: namespace, Client: c, Limiter: l, Log: log}
	if err := f.Sync(ctx); err != nil {
		return nil, Follower{}, fmt.Errorf("clientrate: %w", err)
	}
	return Configure(cfg, l), f, nil
}
