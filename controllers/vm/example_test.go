package vm_test

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/virtkit/virtkit/controllers/vm"
)

// The controller runs in a controller-runtime manager; its clock, events and
// virt/spec defaults are options.
func ExampleReconciler_SetupWithManager() {
	run := func(mgr ctrl.Manager) error {
		return vm.New(vm.WithMaxStartBackoff(5 * time.Minute)).SetupWithManager(mgr)
	}
	_ = run
}

// PlanFor is the run-strategy decision on its own: a Manual VM whose VMI is
// running and that got a stop request for it deletes the VMI.
func ExamplePlanFor() {
	manual := virtv1.RunStrategyManual
	uid := types.UID("f00d")
	machine := &virtv1.VirtualMachine{
		Spec: virtv1.VirtualMachineSpec{RunStrategy: &manual},
		Status: virtv1.VirtualMachineStatus{StateChangeRequests: []virtv1.VirtualMachineStateChangeRequest{
			{Action: virtv1.StopRequest, UID: &uid},
		}},
	}
	vmi := &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{UID: "f00d"},
		Status:     virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Running},
	}
	plan, _ := vm.PlanFor(machine, vmi, time.Now())
	fmt.Printf("delete=%v create=%v printableStatus=%s\n", plan.Delete, plan.Create, vm.PrintableStatus(machine, vmi, vm.DataVolumes{Ready: true}))
	// Output: delete=true create=false printableStatus=Stopping
}
