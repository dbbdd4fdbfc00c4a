package eviction

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/clusterconfig"
	"github.com/virtkit/virtkit/virt/migrate"
)

// DrainTaint returns the drain taint node carries, in its key:Effect form
// ("" for none): the KubeVirt CR's migrations.nodeDrainTaintKey (of
// kubevirtNamespace; "" is clusterconfig.DefaultNamespace) with effect
// NoSchedule, as virt/migrate.DrainTainted reads it. A node that is gone
// carries none. virt-api's evacuatecancel refuses while there is one
// (subresources.WithDrainTaint).
func DrainTaint(ctx context.Context, c client.Reader, kubevirtNamespace, node string) (string, error) {
	kv, err := clusterconfig.Get(ctx, c, kubevirtNamespace)
	if err != nil {
		return "", err
	}
	cfg, err := migrate.ClusterConfig(clusterconfig.Migrations(kv))
	if err != nil {
		return "", err
	}
	n := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("reading node %s: %w", node, err)
	}
	if !migrate.DrainTainted(n, cfg.NodeDrainTaintKey) {
		return "", nil
	}
	t := corev1.Taint{Key: cfg.NodeDrainTaintKey, Effect: corev1.TaintEffectNoSchedule}
	return t.ToString(), nil
}
