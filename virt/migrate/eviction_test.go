package migrate_test

import (
	"testing"

	"gotest.tools/v3/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/migrate"
)

func TestDecideEviction(t *testing.T) {
	v := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "v"},
		Status: virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Running, NodeName: "a"}}
	for _, c := range []struct {
		name     string
		node     string
		ended    bool
		strategy virtv1.EvictionStrategy
		want     migrate.EvictionDecision
	}{
		{"none", "a", false, virtv1.EvictionStrategyNone, migrate.EvictionDecision{Allow: true}},
		{"live migrate", "a", false, virtv1.EvictionStrategyLiveMigrate, migrate.EvictionDecision{Evacuate: true, Message: "Eviction triggered evacuation of VMI ns/v"}},
		{"a migration's target pod", "b", false, virtv1.EvictionStrategyLiveMigrate, migrate.EvictionDecision{Allow: true}},
		{"an ended pod", "a", true, virtv1.EvictionStrategyLiveMigrate, migrate.EvictionDecision{Allow: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.DeepEqual(t, migrate.DecideEviction(v, c.node, c.ended, c.strategy), c.want)
		})
	}
	assert.DeepEqual(t, migrate.DecideEviction(nil, "a", false, virtv1.EvictionStrategyLiveMigrate), migrate.EvictionDecision{Allow: true})
	cluster := virtv1.EvictionStrategyLiveMigrate
	assert.Equal(t, migrate.EvictionStrategy(v, &cluster), virtv1.EvictionStrategyLiveMigrate, "the cluster's default")
	assert.Equal(t, migrate.EvictionStrategy(v, nil), virtv1.EvictionStrategyNone)
	own := virtv1.EvictionStrategyNone
	v.Spec.EvictionStrategy = &own
	assert.Equal(t, migrate.EvictionStrategy(v, &cluster), virtv1.EvictionStrategyNone, "the VMI's own wins")
}

func TestClusterEvictionStrategy(t *testing.T) {
	assert.Assert(t, migrate.ClusterEvictionStrategy(nil) == nil, "no CR")
	kv := &virtv1.KubeVirt{}
	assert.Assert(t, migrate.ClusterEvictionStrategy(kv) == nil, "a CR that sets none")
	live := virtv1.EvictionStrategyLiveMigrate
	kv.Spec.Configuration.EvictionStrategy = &live
	assert.Equal(t, *migrate.ClusterEvictionStrategy(kv), virtv1.EvictionStrategyLiveMigrate)
}
