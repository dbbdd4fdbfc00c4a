package backendstorage_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/storage/backendstorage"
)

// A VM with a persistent vTPM gets one claim, named and labelled after it,
// and found again by its label at the next start.
func Example() {
	yes := true
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "myvm", UID: "uid-1"}}
	vmi.Spec.Domain.Devices.TPM = &virtv1.TPMDevice{Persistent: &yes}
	fmt.Println("needed:", backendstorage.Needed(&vmi.Spec))

	claim := backendstorage.Claim(vmi, "local", backendstorage.AccessMode(false, nil))
	fmt.Println(claim.GenerateName, claim.Labels[backendstorage.LabelVM], claim.Spec.AccessModes[0])

	claim.Name = "persistent-state-for-myvm-x7k2p"
	found := backendstorage.Find([]corev1.PersistentVolumeClaim{*claim}, vmi)
	fmt.Println("found:", found.Name)
	// Output:
	// needed: true
	// persistent-state-for-myvm- myvm ReadWriteOnce
	// found: persistent-state-for-myvm-x7k2p
}
