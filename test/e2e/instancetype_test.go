package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit/internal/localcluster"
	"github.com/virtkit/virtkit/internal/testenv"
)

// TestVMFromInstancetype proves a VM sized by a cluster instancetype, as
// `virtctl create vm --instancetype` writes it, boots on virt-local with the
// instancetype's memory, keeps its copy in a ControllerRevision named in
// its status, and leaves that revision behind no more than itself.
func TestVMFromInstancetype(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	itName := nodeName("tiny")
	it := &instancetypev1beta1.VirtualMachineClusterInstancetype{
		ObjectMeta: metav1.ObjectMeta{Name: itName},
		Spec: instancetypev1beta1.VirtualMachineInstancetypeSpec{
			CPU:    instancetypev1beta1.CPUInstancetype{Guest: 1},
			Memory: instancetypev1beta1.MemoryInstancetype{Guest: resource.MustParse("128Mi")},
		},
	}
	must(t, w.c.Create(ctx, it))

	out, err := exec.CommandContext(ctx, testenv.Output(t, "bin", "virtctl"), "create", "vm", "--name=sized",
		"--instancetype="+itName, "--volume-containerdisk=src:"+w.localImage(localcluster.GuestRepoTag)).Output()
	if err != nil {
		t.Fatalf("virtctl create vm: %v", err)
	}
	vm := &virtv1.VirtualMachine{}
	must(t, yaml.UnmarshalStrict(out, vm))
	vm.Namespace = "default"
	must(t, w.c.Create(ctx, vm))

	vmi := w.waitRunning(ctx, t, vm)
	if m := vmi.Spec.Domain.Memory; m == nil || m.Guest == nil || m.Guest.Cmp(resource.MustParse("128Mi")) != 0 {
		t.Errorf("VMI memory %+v, want the instancetype's 128Mi", m)
	}
	if got := vmi.Annotations[virtv1.ClusterInstancetypeAnnotation]; got != itName {
		t.Errorf("VMI annotation %s = %q, want %q", virtv1.ClusterInstancetypeAnnotation, got, itName)
	}
	w.consoleShows(ctx, t, vmi, "VIRTKIT-HEARTBEAT")

	var rev types.NamespacedName
	eventually(ctx, t, "the VM's status naming its revision", func() (bool, string) {
		got := &virtv1.VirtualMachine{}
		must(t, w.c.Get(ctx, client.ObjectKeyFromObject(vm), got))
		ref := got.Status.InstancetypeRef
		if ref == nil || ref.ControllerRevisionRef == nil {
			return false, fmt.Sprintf("instancetypeRef %+v", ref)
		}
		rev = types.NamespacedName{Namespace: vm.Namespace, Name: ref.ControllerRevisionRef.Name}
		return ref.Name == itName, fmt.Sprintf("instancetypeRef %+v", ref)
	})
	must(t, w.c.Get(ctx, rev, &appsv1.ControllerRevision{}))

	// Deleting the VM takes its revision with it (it owns it).
	must(t, w.c.Delete(ctx, vm))
	w.waitNoVMI(ctx, t, vm)
	eventually(ctx, t, "the revision gone with the VM", func() (bool, string) {
		err := w.c.Get(ctx, rev, &appsv1.ControllerRevision{})
		return apierrors.IsNotFound(err), fmt.Sprintf("revision %s: %v", rev, err)
	})
	must(t, w.c.Delete(ctx, it))
}
