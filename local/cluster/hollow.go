package cluster

import (
	"context"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/virtkit/virtkit/local/hollow"
)

// HollowCapacity is what a hollow node declares, whatever this machine
// has: a large machine's, 32 CPUs and 64 GiB for HollowPodsPerNode pods, so
// that the scheduler spreads launcher pods over the nodes by what they
// request, as on a real cluster (an endless capacity would score every node
// the same and leave the choice to ties).
func HollowCapacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("32"),
		corev1.ResourceMemory:           resource.MustParse("64Gi"),
		corev1.ResourcePods:             *resource.NewQuantity(HollowPodsPerNode, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
	}
}

// HollowPodsPerNode is how many pods a hollow node takes.
const HollowPodsPerNode = 250

// HollowDir is the folder of hollow node name's images
// (local/hollow.New), next to its node folder.
func (c Config) HollowDir(name string) string { return filepath.Join(c.NodeDir(name), "hollow") }

// startHollowNode starts hollow node name and its handler, always in this
// process: its launchers are this process's, and so must its handler's
// fakes be.
func (c *Cluster) startHollowNode(ctx context.Context, name string) (*localNode, error) {
	h, err := hollow.New(c.cfg.HollowDir(name), hollow.WithLogger(c.cfg.Logger.WithName("hollow").WithValues("node", name)),
		hollow.WithProfileLabels(ComponentLabel, ComponentHollowLauncher))
	if err != nil {
		return nil, fmt.Errorf("cluster: hollow node %s: %w", name, err)
	}
	ln := &localNode{name: name, hollow: h}
	if err := c.runNode(ctx, ln); err != nil {
		return nil, err
	}
	return ln, c.runHandler(ctx, ln)
}
