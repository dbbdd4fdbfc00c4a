package operator_test

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/operator"
)

// The images a KubeVirt CR asks for, and the phase its status goes
// through as the installation becomes ready.
func Example() {
	s := operator.Settings{Namespace: "kubevirt", Registry: "quay.io/virtkit", Tag: "v0.1.0", Version: "v0.1.0"}
	kv := &virtv1.KubeVirt{Spec: virtv1.KubeVirtSpec{ImageRegistry: "registry.local:5000/virtkit"}}
	t := operator.TargetOf(kv, s)
	fmt.Println(t.Image(operator.ImageLauncher))

	now := metav1.NewTime(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	st := operator.Status(kv.Status, operator.Observation{Target: t, Created: true, NotReady: []string{"DaemonSet virt-handler"}}, now)
	fmt.Println(st.Phase)
	st = operator.Status(st, operator.Observation{Target: t, Created: true}, now)
	fmt.Println(st.Phase, st.ObservedKubeVirtVersion)
	// Output:
	// registry.local:5000/virtkit/virt-launcher:v0.1.0
	// Deploying
	// Deployed v0.1.0
}
