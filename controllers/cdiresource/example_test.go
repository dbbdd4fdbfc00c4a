package cdiresource_test

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/virtkit/virtkit/controllers/cdiresource"
)

// Two CDI resources: the older is in force; the other is put in phase
// Error.
func ExampleActive() {
	at := func(name string, min int) cdiv1.CDI {
		return cdiv1.CDI{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Date(2026, 12, 7, 10, min, 0, 0, time.UTC))}}
	}
	active, extra := cdiresource.Active([]cdiv1.CDI{at("mine", 5), at("cdi", 1)})
	now := metav1.NewTime(time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC))
	fmt.Println(active.Name, cdiresource.NextStatus(active.Status.Status, true, now).Phase)
	fmt.Println(extra[0].Name, cdiresource.NextStatus(extra[0].Status.Status, false, now).Phase)
	// Output:
	// cdi Deployed
	// mine Error
}
