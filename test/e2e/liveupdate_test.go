package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/conditions"
	vmctl "github.com/virtkit/virtkit/controllers/vm"
	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// KubeVirt's LiveUpdate end to end on two local nodes: raising a running
// VM's CPU sockets from 1 to 2 and its guest memory from 1 GiB to 1.5 GiB
// carries the change over to its VMI, which the workload updater migrates
// to a launcher pod sized for it (the pod it runs in was sized for the
// boot), where the handler hot-plugs a vCPU and virtio-mem memory: the
// guest sees 2 CPUs and 512 MiB more without a reboot (the VM sets no
// maxSockets: KubeVirt's default gives room for 4). Fewer sockets ask
// for a restart; memory past maxGuest is refused with the field.
func TestLiveUpdate(t *testing.T) {
	w := up(t, nodeName("a"), nodeName("b"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	w.liveMigrateWorkloads(ctx, t)

	mi := func(n int64) *resource.Quantity { return resource.NewQuantity(n<<20, resource.BinarySI) }
	vm := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
	vm.Name = "grow"
	d := &vm.Spec.Template.Spec.Domain
	// No maxSockets: the VMI gets KubeVirt's room to grow, 4x its sockets.
	d.CPU = &virtv1.CPU{Sockets: 1, Cores: 1, Threads: 1}
	// KubeVirt's smallest guest with memory hotplug: 1 GiB.
	d.Memory = &virtv1.Memory{Guest: mi(1024), MaxGuest: mi(2048)}
	d.Resources.Requests[corev1.ResourceMemory] = *mi(1024)
	must(t, w.c.Create(ctx, vm))
	src := w.waitRunning(ctx, t, vm)
	if got := src.Spec.Domain.CPU.MaxSockets; got != 4 {
		t.Errorf("the VMI's maxSockets %d, want KubeVirt's default 4", got)
	}
	srcLog := w.serialLog(ctx, t, src)
	waitFile(ctx, t, srcLog, testguest.ReadyMarker)
	resources := regexp.MustCompile(`^` + testguest.ResourcesLine + ` cpus=(\d+) memory_kib=(\d+)$`)
	line, err := testguest.WaitLine(ctx, srcLog, resources)
	must(t, err)
	boot := resources.FindStringSubmatch(strings.TrimSpace(line))
	if boot[1] != "1" {
		t.Fatalf("the guest booted with %s CPUs, want 1: %q", boot[1], line)
	}
	bootKiB, _ := strconv.Atoi(boot[2])
	src = w.waitVMI(ctx, t, vm, "reporting its boot topology and memory", func(v *virtv1.VirtualMachineInstance) bool {
		m := v.Status.Memory
		return v.Status.CurrentCPUTopology != nil && v.Status.CurrentCPUTopology.Sockets == 1 &&
			m != nil && m.GuestAtBoot != nil && m.GuestAtBoot.Cmp(*mi(1024)) == 0 && m.GuestRequested != nil && m.GuestRequested.Cmp(*mi(1024)) == 0
	})

	// Memory past maxGuest: refused by the VM's own validation, nothing changes.
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(vm), vm))
	tooMuch := vm.DeepCopy()
	tooMuch.Spec.Template.Spec.Domain.Memory.Guest = mi(4096)
	if err := w.c.Update(ctx, tooMuch); err == nil || !strings.Contains(err.Error(), "spec.template.spec.domain.memory.maxGuest") {
		t.Errorf("memory past maxGuest: %v, want a refusal naming spec.template.spec.domain.memory.maxGuest", err)
	}

	// The live change.
	before := lastHeartbeat(t, srcLog)
	vm.Spec.Template.Spec.Domain.CPU.Sockets = 2
	vm.Spec.Template.Spec.Domain.Memory.Guest = mi(1536)
	must(t, w.c.Update(ctx, vm))
	mig := w.waitMigration(ctx, t, vm, virtv1.MigrationSucceeded)
	if _, ours := mig.Annotations[virtv1.WorkloadUpdateMigrationAnnotation]; !ours {
		t.Errorf("migration %s is not the workload updater's: annotations %v", mig.Name, mig.Annotations)
	}
	dst := w.waitVMI(ctx, t, vm, "on the other node with 2 sockets and 1.5 GiB, no hotplug condition left", func(v *virtv1.VirtualMachineInstance) bool {
		m := v.Status.Memory
		return v.Status.NodeName != src.Status.NodeName && v.Status.CurrentCPUTopology != nil && v.Status.CurrentCPUTopology.Sockets == 2 &&
			m != nil && m.GuestRequested != nil && m.GuestRequested.Cmp(*mi(1536)) == 0 &&
			conditions.VMI().Find(v.Status.Conditions, virtv1.VirtualMachineInstanceVCPUChange) == nil &&
			conditions.VMI().Find(v.Status.Conditions, virtv1.VirtualMachineInstanceMemoryChange) == nil
	})
	if m := dst.Status.Memory; m.GuestAtBoot == nil || m.GuestAtBoot.Cmp(*mi(1024)) != 0 {
		t.Errorf("status.memory.guestAtBoot %v after the hotplug, want 1Gi", m.GuestAtBoot)
	}
	if q := dst.Spec.Domain.Resources.Requests[corev1.ResourceMemory]; q.Cmp(*mi(1536)) != 0 {
		t.Errorf("the VMI's memory request is %s, want 1536Mi (grown with the guest)", q.String())
	}
	dstLog := filepath.Join(w.launcherFolder(ctx, t, src, mig.UID), contract.SerialLog)
	grown := regexp.MustCompile(`^` + testguest.ResourcesLine + ` cpus=2 memory_kib=` + strconv.Itoa(bootKiB+512<<10) + `$`)
	if _, err := testguest.WaitLine(ctx, dstLog, grown); err != nil {
		t.Errorf("the guest seeing 2 CPUs and 512 MiB more than its %d KiB: %v", bootKiB, err)
	}
	if first := firstHeartbeat(ctx, t, dstLog); first < before {
		t.Errorf("heartbeat %d before the change, first %d on the target: the guest restarted", before, first)
	}
	restartRequired := func() *virtv1.VirtualMachineCondition {
		must(t, w.c.Get(ctx, client.ObjectKeyFromObject(vm), vm))
		return conditions.VM().Find(vm.Status.Conditions, virtv1.VirtualMachineRestartRequired)
	}
	if c := restartRequired(); c != nil {
		t.Errorf("a live update asks for a restart: %+v", c)
	}

	// Fewer sockets cannot be applied live.
	vm.Spec.Template.Spec.Domain.CPU.Sockets = 1
	must(t, w.c.Update(ctx, vm))
	eventually(ctx, t, "the VM saying RestartRequired for fewer sockets", func() (bool, string) {
		c := restartRequired()
		return c != nil && c.Status == corev1.ConditionTrue && c.Message == vmctl.MessageSocketsReduced, fmt.Sprintf("%+v", c)
	})
	if v := w.vmiOf(ctx, t, vm); v.Spec.Domain.CPU.Sockets != 2 {
		t.Errorf("the VMI's sockets went to %d with a change that needs a restart", v.Spec.Domain.CPU.Sockets)
	}
	w.deleteVM(ctx, t, vm)
}
