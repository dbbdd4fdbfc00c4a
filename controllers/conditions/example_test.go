package conditions_test

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/conditions"
)

// A reconciler sets a VMI's Ready condition on every pass; its transition
// time moves only when its status does.
func Example() {
	var st virtv1.VirtualMachineInstanceStatus
	vmi := conditions.VMI()
	at := func(min int) metav1.Time {
		return metav1.NewTime(time.Date(2026, 12, 1, 10, min, 0, 0, time.UTC))
	}
	vmi.Set(&st.Conditions, virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceReady,
		Status: corev1.ConditionFalse, Reason: "PodNotReady"}, at(0))
	vmi.Set(&st.Conditions, virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceReady,
		Status: corev1.ConditionFalse, Reason: "GuestNotRunning"}, at(1))
	ready := vmi.Find(st.Conditions, virtv1.VirtualMachineInstanceReady)
	fmt.Println(ready.Reason, ready.LastTransitionTime.Format("15:04"))
	vmi.Set(&st.Conditions, virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceReady,
		Status: corev1.ConditionTrue}, at(2))
	fmt.Println(ready.Status, ready.LastTransitionTime.Format("15:04"))
	vmi.Remove(&st.Conditions, virtv1.VirtualMachineInstanceReady)
	fmt.Println(len(st.Conditions))
	// Output:
	// GuestNotRunning 10:00
	// True 10:02
	// 0
}
