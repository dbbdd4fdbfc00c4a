package migrate_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/migrate"
)

// DecideEviction is the pod eviction webhook's answer on its own: evicting
// the launcher pod of a running VMI whose strategy is LiveMigrate is refused
// and turned into an evacuation.
func ExampleDecideEviction() {
	live := virtv1.EvictionStrategyLiveMigrate
	v := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "tiny"},
		Spec:   virtv1.VirtualMachineInstanceSpec{EvictionStrategy: &live},
		Status: virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Running, NodeName: "node-a"}}
	d := migrate.DecideEviction(v, "node-a", false, migrate.EvictionStrategy(v, nil))
	fmt.Println(d.Allow, d.Evacuate, d.Message)
	// Output: false true Eviction triggered evacuation of VMI default/tiny
}
