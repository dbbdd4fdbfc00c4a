package vm

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/spec"
)

// sizedVM is a VM with no memory or CPU of its own, sized by the cluster
// instancetype it and the namespaced preference pref.
func sizedVM(ns, name, it, pref string) *virtv1.VirtualMachine {
	vm := testVM(ns, rs(virtv1.RunStrategyAlways), nil)
	vm.Name = name
	vm.Spec.Template.Spec.Domain.Resources = virtv1.ResourceRequirements{}
	vm.Spec.Instancetype = &virtv1.InstancetypeMatcher{Name: it, Kind: spec.KindClusterInstancetype}
	vm.Spec.Preference = &virtv1.PreferenceMatcher{Name: pref, Kind: spec.KindPreference}
	return vm
}

func clusterInstancetype(name string, cpus uint32, mem string) *instancetypev1beta1.VirtualMachineClusterInstancetype {
	return &instancetypev1beta1.VirtualMachineClusterInstancetype{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: instancetypev1beta1.VirtualMachineInstancetypeSpec{
			CPU:    instancetypev1beta1.CPUInstancetype{Guest: cpus},
			Memory: instancetypev1beta1.MemoryInstancetype{Guest: resource.MustParse(mem)},
		},
	}
}

// testInstancetype: a VM that names an instancetype and a preference
// starts with their CPU, memory and topology, keeps their copies in
// ControllerRevisions named in its status, and later edits of the
// instancetype do not change its next VMI.
func testInstancetype(t *testing.T, cl *cluster) {
	ctx := context.Background()
	ns := cl.namespace(t, "sized")
	itName := "small-" + ns
	if err := cl.c.Create(ctx, clusterInstancetype(itName, 2, "256Mi")); err != nil {
		t.Fatal(err)
	}
	cores := instancetypev1beta1.Cores
	pref := &instancetypev1beta1.VirtualMachinePreference{ObjectMeta: metav1.ObjectMeta{Name: "cores", Namespace: ns},
		Spec: instancetypev1beta1.VirtualMachinePreferenceSpec{CPU: &instancetypev1beta1.CPUPreferences{PreferredCPUTopology: &cores}}}
	if err := cl.c.Create(ctx, pref); err != nil {
		t.Fatal(err)
	}
	vm := sizedVM(ns, "vm1", itName, "cores")
	key := client.ObjectKeyFromObject(vm)
	if err := cl.c.Create(ctx, vm); err != nil {
		t.Fatal(err)
	}
	vmi := cl.waitVMI(t, key, "")
	checkSized(t, vmi, 2, "256Mi")
	if got := vmi.Annotations[virtv1.ClusterInstancetypeAnnotation]; got != itName {
		t.Errorf("annotation %s = %q, want %q", virtv1.ClusterInstancetypeAnnotation, got, itName)
	}
	if got := vmi.Annotations[virtv1.PreferenceAnnotation]; got != "cores" {
		t.Errorf("annotation %s = %q, want cores", virtv1.PreferenceAnnotation, got)
	}
	var got *virtv1.VirtualMachine
	eventually(t, "the revisions in the VM's status", func() (bool, string) {
		got = cl.getVM(t, key)
		it, p := got.Status.InstancetypeRef, got.Status.PreferenceRef
		return it != nil && it.ControllerRevisionRef != nil && p != nil && p.ControllerRevisionRef != nil,
			fmt.Sprintf("instancetypeRef %+v, preferenceRef %+v", it, p)
	})
	if r := got.Status.InstancetypeRef; r.Name != itName || r.Kind != spec.KindClusterInstancetype {
		t.Errorf("instancetypeRef %+v, want %s %s", r, spec.KindClusterInstancetype, itName)
	}
	rev := &appsv1.ControllerRevision{}
	if err := cl.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: got.Status.InstancetypeRef.ControllerRevisionRef.Name}, rev); err != nil {
		t.Fatal(err)
	}
	if len(rev.OwnerReferences) != 1 || rev.OwnerReferences[0].UID != got.UID {
		t.Errorf("revision owners %+v, want the VM", rev.OwnerReferences)
	}

	// The instancetype grows; the VM's next VMI keeps the copy it started with.
	edit := &instancetypev1beta1.VirtualMachineClusterInstancetype{}
	if err := cl.c.Get(ctx, types.NamespacedName{Name: itName}, edit); err != nil {
		t.Fatal(err)
	}
	edit.Spec.Memory.Guest = resource.MustParse("512Mi")
	if err := cl.c.Update(ctx, edit); err != nil {
		t.Fatal(err)
	}
	cl.setPhase(t, key, virtv1.Running, true)
	cl.request(t, key, stopRequest(vmi.UID), startRequest)
	checkSized(t, cl.waitVMI(t, key, vmi.UID), 2, "256Mi")

	// A VM naming an instancetype that does not exist yet fails to start,
	// naming it, and starts once it exists.
	missing := "later-" + ns
	vm2 := sizedVM(ns, "vm2", missing, "cores")
	key2 := client.ObjectKeyFromObject(vm2)
	if err := cl.c.Create(ctx, vm2); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a FailedCreate naming the instancetype", func() (bool, string) {
		for _, c := range cl.getVM(t, key2).Status.Conditions {
			if c.Type == virtv1.VirtualMachineFailure {
				return c.Reason == ReasonFailedCreate && strings.Contains(c.Message, missing) && strings.Contains(c.Message, "spec.instancetype"), c.Message
			}
		}
		return false, "no Failure condition"
	})
	if err := cl.c.Create(ctx, clusterInstancetype(missing, 1, "128Mi")); err != nil {
		t.Fatal(err)
	}
	checkSized(t, cl.waitVMI(t, key2, ""), 1, "128Mi")
}

// checkSized checks the VMI has cpus cores in one socket (the preference)
// and mem of guest memory (the instancetype).
func checkSized(t *testing.T, vmi *virtv1.VirtualMachineInstance, cpus uint32, mem string) {
	t.Helper()
	d := vmi.Spec.Domain
	if d.CPU == nil || d.CPU.Cores != cpus || d.CPU.Sockets != 1 {
		t.Errorf("VMI CPU %+v, want %d cores in 1 socket", d.CPU, cpus)
	}
	if d.Memory == nil || d.Memory.Guest == nil || d.Memory.Guest.Cmp(resource.MustParse(mem)) != 0 {
		t.Errorf("VMI memory %+v, want guest %s", d.Memory, mem)
	}
}
