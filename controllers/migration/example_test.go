package migration_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/virtkit/virtkit/controllers/migration"
	"github.com/virtkit/virtkit/controllers/vmi"
)

// The controller runs in a controller-runtime manager next to the VMI
// controller, with the same launcher pod options.
func ExampleReconciler_SetupWithManager() {
	run := func(mgr ctrl.Manager) error {
		return migration.New(migration.WithPodOptions(vmi.PodOptions{LauncherImage: "virtkit/virt-launcher:v0.1.0", Emulation: true})).
			SetupWithManager(mgr)
	}
	_ = run
}

// Decide is the state machine on its own: a pending migration of a running
// VMI that the parallel limits admit creates its target pod.
func ExampleDecide() {
	m := &virtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: "default", UID: "u1", Finalizers: []string{migration.Finalizer}},
		Spec:       virtv1.VirtualMachineInstanceMigrationSpec{VMIName: "tiny"},
		Status:     virtv1.VirtualMachineInstanceMigrationStatus{Phase: virtv1.MigrationPending},
	}
	v := &virtv1.VirtualMachineInstance{Status: virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Running, NodeName: "node-a"}}
	s := migration.Decide(migration.Observed{Migration: m, VMI: v, Admitted: true})
	fmt.Println(s.CreateTarget, s.StartState, s.Phase)
	// Output: true true Scheduling
}
