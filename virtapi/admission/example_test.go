package admission_test

import (
	"fmt"

	"github.com/virtkit/virtkit/virtapi/admission"
)

// The webhook configurations to install in front of virt-api: they match
// CREATE and UPDATE only, so deletes never wait for virt-api.
func ExampleConfigurations() {
	mutating, validating := admission.Configurations(admission.Service{Namespace: "kubevirt", Name: "virt-api", Port: 443})
	w := validating.Webhooks[0]
	fmt.Println(mutating.Name, validating.Name)
	fmt.Println(w.Rules[0].Operations, w.Rules[0].Resources, *w.FailurePolicy, *w.TimeoutSeconds)
	fmt.Println(w.Rules[1].APIGroups, w.Rules[1].APIVersions, w.Rules[1].Resources)
	fmt.Println(mutating.Webhooks[0].Rules[0].Resources)
	// Output:
	// virtkit-mutating virtkit-validating
	// [CREATE UPDATE] [virtualmachines virtualmachineinstances virtualmachineinstancereplicasets] Fail 10
	// [pool.kubevirt.io] [v1beta1] [virtualmachinepools]
	// [virtualmachines virtualmachineinstances]
}
