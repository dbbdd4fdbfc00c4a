package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
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

// TestVMFromInstancetype proves a VM sized by a cluster instancetype and a
// preference, both as `virtctl create` writes them, boots on virt-local
// with the instancetype's memory and the preference's devices, keeps their
// copies in ControllerRevisions named in its status (so that editing the
// instancetype changes neither its next start nor what `virtctl expand`
// shows), is refused when its template sets memory too, and leaves its
// revisions behind no more than itself.
func TestVMFromInstancetype(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	itName, prefName := nodeName("tiny"), nodeName("rng")
	virtctl := func(args ...string) []byte {
		t.Helper()
		cmd := exec.CommandContext(ctx, testenv.Output(t, "bin", "virtctl"), append(args, "--kubeconfig", w.kubeconfig)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("virtctl %v: %v", args, err)
		}
		return out
	}
	it := &instancetypev1beta1.VirtualMachineClusterInstancetype{}
	must(t, yaml.UnmarshalStrict(virtctl("create", "instancetype", "--name="+itName, "--cpu=1", "--memory=128Mi"), it))
	must(t, w.c.Create(ctx, it))
	pref := &instancetypev1beta1.VirtualMachineClusterPreference{ObjectMeta: metav1.ObjectMeta{Name: prefName},
		Spec: instancetypev1beta1.VirtualMachinePreferenceSpec{Devices: &instancetypev1beta1.DevicePreferences{PreferredRng: &virtv1.Rng{}}}}
	must(t, w.c.Create(ctx, pref))

	out := virtctl("create", "vm", "--name=sized", "--instancetype="+itName, "--preference="+prefName,
		"--volume-containerdisk=src:"+w.localImage(localcluster.GuestRepoTag))
	vm := &virtv1.VirtualMachine{}
	must(t, yaml.UnmarshalStrict(out, vm))
	vm.Namespace = "default"
	must(t, w.c.Create(ctx, vm))

	// Setting memory as well is refused, naming the field.
	both := vm.DeepCopy()
	both.Name = "both"
	both.Spec.Template.Spec.Domain.Memory = &virtv1.Memory{Guest: ptrTo(resource.MustParse("256Mi"))}
	if err := w.c.Create(ctx, both); err == nil || !strings.Contains(err.Error(), "spec.template.spec.domain.memory") {
		t.Errorf("a VM setting memory and naming an instancetype: %v, want a refusal at spec.template.spec.domain.memory", err)
	}

	start := time.Now()
	vmi := w.waitRunning(ctx, t, vm)
	t.Logf("running after %s", time.Since(start).Round(time.Second))
	if m := vmi.Spec.Domain.Memory; m == nil || m.Guest == nil || m.Guest.Cmp(resource.MustParse("128Mi")) != 0 {
		t.Errorf("VMI memory %+v, want the instancetype's 128Mi", m)
	}
	if vmi.Spec.Domain.Devices.Rng == nil {
		t.Errorf("VMI devices %+v, want the preference's RNG", vmi.Spec.Domain.Devices)
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

	// Edited, the instancetype does not change the VM: not its expansion,
	// not its next start.
	edited := &instancetypev1beta1.VirtualMachineClusterInstancetype{}
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(it), edited))
	edited.Spec.Memory.Guest = resource.MustParse("256Mi")
	must(t, w.c.Update(ctx, edited))
	expanded := &virtv1.VirtualMachine{}
	must(t, yaml.UnmarshalStrict(virtctl("expand", "--vm", vm.Name, "-n", vm.Namespace), expanded))
	if m := expanded.Spec.Template.Spec.Domain.Memory; expanded.Spec.Instancetype != nil || m == nil || m.Guest.String() != "128Mi" {
		t.Errorf("virtctl expand: instancetype %+v, memory %+v; want the stored 128Mi written in", expanded.Spec.Instancetype, m)
	}
	t.Logf("restarting at %s", time.Since(start).Round(time.Second))
	virtctl("restart", vm.Name, "-n", vm.Namespace)
	var again *virtv1.VirtualMachineInstance
	eventually(ctx, t, "a new VMI running after the restart", func() (bool, string) {
		v := &virtv1.VirtualMachineInstance{}
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(vm), v); err != nil {
			return false, err.Error()
		}
		again = v
		return v.UID != vmi.UID && v.Status.Phase == virtv1.Running, fmt.Sprintf("VMI %s phase %s", v.UID, v.Status.Phase)
	})
	t.Logf("running again after %s", time.Since(start).Round(time.Second))
	if m := again.Spec.Domain.Memory; m == nil || m.Guest.String() != "128Mi" {
		t.Errorf("VMI after editing the instancetype and restarting: memory %+v, want the stored 128Mi", m)
	}
	// Booted (and so listening for the power button the delete presses).
	w.consoleShows(ctx, t, again, "VIRTKIT-HEARTBEAT")

	// Deleting the VM takes its revision with it (it owns it).
	must(t, w.c.Delete(ctx, vm))
	w.waitNoVMI(ctx, t, vm)
	t.Logf("deleted after %s", time.Since(start).Round(time.Second))
	eventually(ctx, t, "the revision gone with the VM", func() (bool, string) {
		err := w.c.Get(ctx, rev, &appsv1.ControllerRevision{})
		return apierrors.IsNotFound(err), fmt.Sprintf("revision %s: %v", rev, err)
	})
	must(t, w.c.Delete(ctx, it))
	must(t, w.c.Delete(ctx, pref))
}

// TestCommonInstancetypes installs KubeVirt's common instancetypes from
// the repository's one manifest, as a user would with kubectl apply, and
// boots a VM sized u1.nano.
func TestCommonInstancetypes(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := os.ReadFile("../../deploy/instancetypes/common-clusterinstancetypes.yaml")
	must(t, err)
	var installed []*instancetypev1beta1.VirtualMachineClusterInstancetype
	for _, doc := range bytes.Split(b, []byte("\n---\n"))[1:] {
		it := &instancetypev1beta1.VirtualMachineClusterInstancetype{}
		must(t, yaml.UnmarshalStrict(doc, it))
		must(t, w.c.Create(ctx, it))
		installed = append(installed, it)
	}
	defer func() {
		for _, it := range installed {
			must(t, w.c.Delete(context.Background(), it))
		}
	}()

	out, err := exec.CommandContext(ctx, testenv.Output(t, "bin", "virtctl"), "create", "vm", "--name=nano",
		"--instancetype=u1.nano", "--volume-containerdisk=src:"+w.localImage(localcluster.GuestRepoTag)).Output()
	must(t, err)
	vm := &virtv1.VirtualMachine{}
	must(t, yaml.UnmarshalStrict(out, vm))
	vm.Namespace = "default"
	must(t, w.c.Create(ctx, vm))
	vmi := w.waitRunning(ctx, t, vm)
	if m := vmi.Spec.Domain.Memory; m == nil || m.Guest == nil || m.Guest.String() != "512Mi" {
		t.Errorf("VMI memory %+v, want u1.nano's 512Mi", m)
	}
	w.consoleShows(ctx, t, vmi, "VIRTKIT-HEARTBEAT")
	must(t, w.c.Delete(ctx, vm))
	w.waitNoVMI(ctx, t, vm)
}
