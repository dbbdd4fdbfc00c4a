package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kptr "k8s.io/utils/ptr"
	clonev1 "kubevirt.io/api/clone/v1beta1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit/internal/testenv"
)

// TestVMClone is the clone proof on virt-local: the guest of VM sheep
// writes marker 1 on its claim and is stopped; a clone made with
// `virtctl create clone` (keeping no label of example.com) yields VM
// dolly, halted, without the filtered label (sheep's status says its
// claim can be snapshotted and its other volumes cannot); started, dolly's guest reads
// marker 1 from its own copy of the claim, with a MAC and firmware UUID of
// its own. The webhook names a clone's target when it names none, and
// refuses a malformed filter naming the field. Deleting dolly deletes the
// clone, and deleting everything leaves no snapshot, restore,
// VolumeSnapshot, claim or volume folder.
func TestVMClone(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ns := "default"

	vm, pvc := w.tinyWithClaim(ctx, t, ns, "sheep", func(vm *virtv1.VirtualMachine) {
		vm.Labels = map[string]string{"app": "flock", "example.com/owner": "dolly-lab"}
	})
	first := w.waitRunning(ctx, t, vm)
	// vda is the containerDisk, vdb cloud-init's, vdc the claim's.
	waitFile(ctx, t, w.serialLog(ctx, t, first), "VIRTKIT-DISK vdc previous=none wrote=1 readback=ok")
	if len(first.Status.Interfaces) == 0 || first.Status.Interfaces[0].MAC == "" {
		t.Fatalf("the source's interfaces %+v: want its MAC", first.Status.Interfaces)
	}
	// The VM says which of its volumes a snapshot (and so a clone) copies,
	// as KubeVirt's status.volumeSnapshotStatuses does.
	eventually(ctx, t, "the VM's volume snapshot statuses", func() (bool, string) {
		got := &virtv1.VirtualMachine{}
		must(t, w.c.Get(ctx, client.ObjectKeyFromObject(vm), got))
		enabled := map[string]bool{}
		for _, s := range got.Status.VolumeSnapshotStatuses {
			enabled[s.Name] = s.Enabled
		}
		return len(enabled) == len(vm.Spec.Template.Spec.Volumes) && enabled["data"] && !enabled[vm.Spec.Template.Spec.Volumes[0].Name],
			fmt.Sprintf("%+v", got.Status.VolumeSnapshotStatuses)
	})
	w.virtctl(ctx, t, "stop", vm.Name, "-n", ns)
	w.waitNoVMI(ctx, t, vm)

	// The webhook refuses a malformed filter, naming it, and names the
	// target of a clone that names none.
	bad := &clonev1.VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"},
		Spec: clonev1.VirtualMachineCloneSpec{Source: &corev1.TypedLocalObjectReference{APIGroup: kptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: vm.Name},
			LabelFilters: []string{"a*b"}}}
	if err := w.c.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "spec.labelFilters[0]") {
		t.Errorf("a clone with filter a*b: %v, want it refused naming spec.labelFilters[0]", err)
	}
	bad.Spec.LabelFilters = nil
	must(t, w.c.Create(ctx, bad, client.DryRunAll))
	if name := bad.Spec.Target.Name; !regexp.MustCompile(`^clone-sheep-[a-z0-9]{5}$`).MatchString(name) {
		t.Errorf("the defaulted target %q, want clone-sheep-XXXXX", name)
	}

	// The clone, as virtctl writes it.
	cmd := exec.CommandContext(ctx, testenv.Output(t, "bin", "virtctl"), "create", "clone", "--name", "dolly-clone", "--source-name", vm.Name,
		"--target-name", "dolly", "--label-filter", "*", "--label-filter", "!example.com/*", "-n", ns, "--kubeconfig", w.kubeconfig)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("virtctl create clone: %v", err)
	}
	vc := &clonev1.VirtualMachineClone{}
	must(t, yaml.UnmarshalStrict(out, vc))
	must(t, w.c.Create(ctx, vc))
	eventually(ctx, t, "the clone succeeded", func() (bool, string) {
		must(t, w.c.Get(ctx, client.ObjectKeyFromObject(vc), vc))
		if vc.Status.Phase == clonev1.Failed {
			t.Fatalf("the clone failed: %+v", vc.Status)
		}
		return vc.Status.Phase == clonev1.Succeeded && vc.Status.RestoreName == nil, fmt.Sprintf("%+v", vc.Status)
	})
	dolly := &virtv1.VirtualMachine{}
	must(t, w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dolly"}, dolly))
	if s, _ := dolly.RunStrategy(); s != virtv1.RunStrategyHalted {
		t.Errorf("the clone's run strategy is %s, want Halted", s)
	}
	if _, ok := dolly.Labels["example.com/owner"]; ok || dolly.Labels["app"] != "flock" {
		t.Errorf("the clone's labels %v: want app kept and example.com/owner left out", dolly.Labels)
	}

	w.virtctl(ctx, t, "start", dolly.Name, "-n", ns)
	dollyVMI := w.waitRunning(ctx, t, dolly)
	waitFile(ctx, t, w.serialLog(ctx, t, dollyVMI), "VIRTKIT-DISK vdc previous=1 wrote=2 readback=ok")
	if len(dollyVMI.Status.Interfaces) == 0 || dollyVMI.Status.Interfaces[0].MAC == "" || dollyVMI.Status.Interfaces[0].MAC == first.Status.Interfaces[0].MAC {
		t.Errorf("MACs: clone %+v, source %+v; want the clone's its own", dollyVMI.Status.Interfaces, first.Status.Interfaces)
	}
	if a, b := dollyVMI.Spec.Domain.Firmware, first.Spec.Domain.Firmware; a == nil || b == nil || a.UUID == b.UUID {
		t.Errorf("firmware: clone %+v, source %+v; want a UUID of its own", a, b)
	}

	// The source is untouched: its claim still holds marker 1 only.
	w.virtctl(ctx, t, "start", vm.Name, "-n", ns)
	second := w.waitRunning(ctx, t, vm)
	waitFile(ctx, t, w.serialLog(ctx, t, second), "VIRTKIT-DISK vdc previous=1 wrote=2 readback=ok")

	// Deleting the clone's VM deletes the clone; then nothing is left.
	must(t, w.c.Delete(ctx, dolly))
	eventually(ctx, t, "the clone gone with its VM", func() (bool, string) {
		err := w.c.Get(ctx, client.ObjectKeyFromObject(vc), &clonev1.VirtualMachineClone{})
		return err != nil, fmt.Sprint(err)
	})
	must(t, w.c.Delete(ctx, vm))
	must(t, w.c.Delete(ctx, pvc))
	w.waitStorageEmpty(ctx, t)
}
