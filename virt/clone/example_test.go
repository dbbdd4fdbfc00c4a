package clone_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clonev1 "kubevirt.io/api/clone/v1beta1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/clone"
)

// A clone gives the copy its own MAC and drops the labels its filters
// leave out; the restore that makes the copy carries the patches.
func ExamplePatches() {
	vm := &virtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Labels: map[string]string{"app": "db", "backup.example.com/policy": "daily"}},
		Spec: virtv1.VirtualMachineSpec{Template: &virtv1.VirtualMachineInstanceTemplateSpec{Spec: virtv1.VirtualMachineInstanceSpec{
			Domain: virtv1.DomainSpec{Devices: virtv1.Devices{Interfaces: []virtv1.Interface{{Name: "default", MacAddress: "02:00:00:00:00:01"}}}}}}},
	}
	c := &clonev1.VirtualMachineClone{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db-copy", UID: "4b7c"},
		Spec: clonev1.VirtualMachineCloneSpec{
			Source:       &corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "db"},
			LabelFilters: []string{"*", "!backup.example.com/*"},
		},
	}
	clone.Default(c, "x2z4b")
	patches, err := clone.Patches(vm, &c.Spec)
	if err != nil {
		panic(err)
	}
	r := clone.Restore(c, clone.SnapshotName(c.UID), patches)
	fmt.Println(r.Name, "makes", r.Spec.Target.Name, "from", r.Spec.VirtualMachineSnapshotName)
	for _, p := range r.Spec.Patches {
		fmt.Println(p)
	}
	// Output:
	// tmp-restore-4b7c makes clone-db-x2z4b from tmp-snapshot-4b7c
	// {"op":"remove","path":"/spec/template/spec/domain/devices/interfaces/0/macAddress"}
	// {"op":"remove","path":"/metadata/labels/backup.example.com~1policy"}
}
