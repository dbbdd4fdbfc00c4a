package events_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/virtkit/virtkit/controllers/events"
)

// A reconciler given a recorder keeps it; one given none would get its
// manager's in SetupWithManager.
func Example() {
	rec := record.NewFakeRecorder(1)
	var mgr events.Manager // unused: a recorder is set
	r := events.OrManager(rec, mgr, "virtualmachineinstance-controller")
	r.Eventf(&corev1.Pod{}, corev1.EventTypeNormal, "SuccessfulCreate", "Created virtual machine pod %s", "virt-launcher-vm1-x7b2q")
	fmt.Println(<-rec.Events)
	// Output: Normal SuccessfulCreate Created virtual machine pod virt-launcher-vm1-x7b2q
}
