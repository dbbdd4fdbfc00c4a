package replicaset_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/replicaset"
)

// A replica set of two finds one VMI of its own that failed and an orphan
// its selector matches: it adopts the orphan, deletes the failed VMI and
// creates one more.
func ExamplePlanFor() {
	two := int32(2)
	rs := &virtv1.VirtualMachineInstanceReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "rs-uid"},
		Spec: virtv1.VirtualMachineInstanceReplicaSetSpec{
			Replicas: &two,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: &virtv1.VirtualMachineInstanceTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}},
		},
	}
	failed := virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "webx7k2p", Namespace: "default",
		Labels: map[string]string{"app": "web"}, OwnerReferences: []metav1.OwnerReference{
			*metav1.NewControllerRef(rs, virtv1.VirtualMachineInstanceReplicaSetGroupVersionKind)}},
		Status: virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Failed}}
	stray := virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "stray", Namespace: "default",
		Labels: map[string]string{"app": "web"}}}

	p, err := replicaset.PlanFor(rs, []virtv1.VirtualMachineInstance{failed, stray}, 0)
	if err != nil {
		panic(err)
	}
	fmt.Printf("adopt %v, clean %v, create %d\n", p.Adopt, p.Clean, p.Create)
	// Output:
	// adopt [stray], clean [webx7k2p], create 1
}
