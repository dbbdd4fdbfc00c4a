package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	migrationsv1 "kubevirt.io/api/migrations/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/deploy/certs/certfiles"
	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/local/cluster"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// Live migration end to end: on two local nodes the running example guest migrates
// with `virtctl migrate` (the binary) while the heartbeat counter it prints
// on its console keeps increasing without a reset and its web server keeps
// answering at the VMI's address; the VMI then reports the other node and
// the target pod's address, its console is served from there, and the
// source pod ends without failing the VMI.
func TestMigration(t *testing.T) {
	a, b := nodeName("a"), nodeName("b")
	w := up(t, a, b)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	vm, src, srcLog := w.tinyReady(ctx, t)
	srcIP := src.Status.Interfaces[0].IP
	httpAnswers(ctx, t, "http://"+srcIP+"/", "tiny")

	// A source handler whose certificate names another node is refused by
	// the target's: the migration fails saying so, and the guest goes on
	// at the source.
	restore := w.swapMigrationCert(t, src.Status.NodeName, "impostor")
	w.virtctl(ctx, t, "migrate", vm.Name, "-n", vm.Namespace)
	refused := w.waitMigration(ctx, t, vm, virtv1.MigrationFailed)
	if ms := refused.Status.MigrationState; ms == nil || !strings.Contains(ms.FailureReason, `and the certificate names node "impostor"`) {
		t.Errorf("the refused migration's state: %+v", ms)
	}
	early := lastHeartbeat(t, srcLog)
	time.Sleep(3 * time.Second)
	if v := w.vmiOf(ctx, t, vm); v.Status.Phase != virtv1.Running || v.Status.NodeName != src.Status.NodeName {
		t.Errorf("after the refused migration: phase %s on %s", v.Status.Phase, v.Status.NodeName)
	}
	if later := lastHeartbeat(t, srcLog); later <= early {
		t.Errorf("the guest's heartbeat stopped at the source after the refused migration: %d, then %d", early, later)
	}
	restore()
	httpAnswers(ctx, t, "http://"+srcIP+"/", "tiny")
	before := lastHeartbeat(t, srcLog)

	// Ask the web server every 100 ms, at the address the VMI reports.
	watch := w.watchHTTP(ctx, t, vm)
	w.virtctl(ctx, t, "migrate", vm.Name, "-n", vm.Namespace)
	mig := w.waitMigration(ctx, t, vm, virtv1.MigrationSucceeded)
	took := mig.Status.MigrationState.EndTimestamp.Sub(mig.Status.MigrationState.StartTimestamp.Time)

	dst := w.waitVMI(ctx, t, vm, "on the other node with the target pod's address", func(v *virtv1.VirtualMachineInstance) bool {
		return v.Status.NodeName != src.Status.NodeName && len(v.Status.Interfaces) > 0 && v.Status.Interfaces[0].IP != srcIP
	})
	ms := dst.Status.MigrationState
	// The handlers met over TCP: the target's address is its handler's
	// port, not a node name.
	if _, _, err := net.SplitHostPort(ms.TargetNodeAddress); err != nil {
		t.Errorf("targetNodeAddress %q: not a handler's host:port: %v", ms.TargetNodeAddress, err)
	}
	t.Logf("migrated from %s (%s) to %s (%s) in about %s; migration state %+v", src.Status.NodeName, srcIP,
		dst.Status.NodeName, dst.Status.Interfaces[0].IP, took, ms)
	if ms.SourceNode != src.Status.NodeName || ms.TargetNode != dst.Status.NodeName || !ms.Completed || ms.Failed ||
		ms.Mode != virtv1.MigrationPreCopy || ms.TargetPod == "" || ms.StartTimestamp == nil || ms.EndTimestamp == nil {
		t.Errorf("migrationState = %+v", ms)
	}
	if dst.Status.Phase != virtv1.Running || dst.Status.Interfaces[0].MAC != src.Status.Interfaces[0].MAC {
		t.Errorf("after the migration: phase %s, interfaces %+v (before %+v)", dst.Status.Phase, dst.Status.Interfaces, src.Status.Interfaces)
	}

	// The heartbeat goes on in the target's console log from where it was.
	dstLog := filepath.Join(w.launcherFolder(ctx, t, src, mig.UID), contract.SerialLog)
	first := firstHeartbeat(ctx, t, dstLog)
	last := lastHeartbeat(t, srcLog)
	if first < last || first > last+30 || last < before {
		t.Errorf("heartbeat: %d before the migration, last %d on the source, first %d on the target: not a continuation", before, last, first)
	}
	w.consoleShows(ctx, t, dst, testguest.HeartbeatLine) // served by the target's handler
	httpAnswers(ctx, t, "http://"+dst.Status.Interfaces[0].IP+"/", "tiny")
	time.Sleep(2 * time.Second)
	answers, errs, beats := watch()
	t.Logf("web server during the migration: %d answers, heartbeat %d..%d, %d failed requests: %v",
		answers, beats[0], beats[len(beats)-1], len(errs), errs)
	for i := 1; i < len(beats); i++ {
		if beats[i] < beats[i-1] {
			t.Errorf("the page's heartbeat went back from %d to %d: the guest restarted", beats[i-1], beats[i])
		}
	}
	if len(errs) > 10 {
		t.Errorf("the web server did not answer %d times (more than a second): %v", len(errs), errs)
	}

	// The source pod ended (Succeeded), the VMI did not.
	eventually(ctx, t, "the source pod "+ms.SourcePod+" ended", func() (bool, string) {
		var p corev1.Pod
		err := w.c.Get(ctx, client.ObjectKey{Namespace: vm.Namespace, Name: ms.SourcePod}, &p)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return err == nil && p.Status.Phase == corev1.PodSucceeded, fmt.Sprintf("%v %s", err, p.Status.Phase)
	})
	time.Sleep(2 * time.Second)
	if v := w.vmiOf(ctx, t, vm); v.Status.Phase != virtv1.Running || v.Status.NodeName != dst.Status.NodeName {
		t.Errorf("after the source pod ended: phase %s on %s", v.Status.Phase, v.Status.NodeName)
	}

	// Deleting the VM stops the guest on its new node and leaves no pod
	// and no launcher folder on either node.
	w.deleteVM(ctx, t, vm)
}

// A migration that cannot converge under a tiny bandwidth is aborted at its
// completion timeout, and one cancelled with `virtctl migrate-cancel`
// while it runs is aborted too: each time the guest goes on on the source,
// and the target pod goes.
func TestMigrationAborts(t *testing.T) {
	w := up(t, nodeName("a"), nodeName("b"))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	vm, src, srcLog := w.tinyReady(ctx, t)

	// The cluster's migration settings, changed in the KubeVirt CR while
	// every daemon runs: the next migration follows them, with no daemon
	// restarted. 1 MiB/s for 128 MiB of memory with 3 s per GB: it cannot
	// make it.
	timeout := int64(3)
	kvKey := client.ObjectKey{Namespace: cluster.Namespace, Name: "kubevirt"}
	updateKubeVirt(ctx, t, w, kvKey, func(kv *virtv1.KubeVirt) {
		kv.Spec.Configuration.MigrationConfiguration = &virtv1.MigrationConfiguration{
			BandwidthPerMigration: resource.NewQuantity(1<<20, resource.BinarySI), CompletionTimeoutPerGiB: &timeout}
	})
	w.virtctl(ctx, t, "migrate", vm.Name, "-n", vm.Namespace)
	byCR := w.waitMigration(ctx, t, vm, virtv1.MigrationFailed)
	ms := byCR.Status.MigrationState
	t.Logf("timed out by the CR's settings: %+v", ms)
	if !strings.Contains(ms.FailureReason, "completion timeout 3s") || ms.MigrationPolicyName != nil ||
		ms.MigrationConfiguration == nil || ms.MigrationConfiguration.BandwidthPerMigration == nil ||
		ms.MigrationConfiguration.BandwidthPerMigration.Value() != 1<<20 {
		t.Errorf("failure reason %q, policy %v, configuration %+v: want the CR's completion timeout and bandwidth, no policy",
			ms.FailureReason, ms.MigrationPolicyName, ms.MigrationConfiguration)
	}
	w.stillOnSource(ctx, t, vm, src, srcLog, byCR)
	updateKubeVirt(ctx, t, w, kvKey, func(kv *virtv1.KubeVirt) { kv.Spec.Configuration.MigrationConfiguration = nil })

	// The same through a MigrationPolicy, over the CR's defaults.
	policy := &migrationsv1.MigrationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "slow"}, Spec: migrationsv1.MigrationPolicySpec{
		BandwidthPerMigration:   resource.NewQuantity(1<<20, resource.BinarySI),
		CompletionTimeoutPerGiB: &timeout,
		Selectors:               &migrationsv1.Selectors{VirtualMachineInstanceSelector: migrationsv1.LabelSelector{"kubevirt.io/vm": "tiny"}},
	}}
	must(t, w.c.Create(ctx, policy))
	w.virtctl(ctx, t, "migrate", vm.Name, "-n", vm.Namespace)
	mig := w.waitMigration(ctx, t, vm, virtv1.MigrationFailed)
	ms = mig.Status.MigrationState
	t.Logf("timed out by the policy: %+v", ms)
	if !strings.Contains(ms.FailureReason, "completion timeout 3s") || ms.MigrationPolicyName == nil || *ms.MigrationPolicyName != "slow" {
		t.Errorf("failure reason %q, policy %v: want the completion timeout of policy slow", ms.FailureReason, ms.MigrationPolicyName)
	}
	w.stillOnSource(ctx, t, vm, src, srcLog, mig)

	// A migration whose target stops taking data: the target's QEMU is
	// frozen (SIGSTOP) while memory moves, so what remains stops
	// shrinking once the buffers between them fill, and the CR's 3 s
	// progress timeout fails it long before the policy's completion
	// timeout (600 s per GB now). Unfrozen, it moves on at 1 MiB/s: for
	// 5 s first, longer than the progress timeout, it does not fail.
	long := int64(600)
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(policy), policy))
	policy.Spec.CompletionTimeoutPerGiB = &long
	must(t, w.c.Update(ctx, policy))
	updateKubeVirt(ctx, t, w, kvKey, func(kv *virtv1.KubeVirt) {
		kv.Spec.Configuration.MigrationConfiguration = &virtv1.MigrationConfiguration{ProgressTimeout: &timeout}
	})
	w.virtctl(ctx, t, "migrate", vm.Name, "-n", vm.Namespace)
	stalling := w.waitMigration(ctx, t, vm, virtv1.MigrationRunning)
	time.Sleep(5 * time.Second)
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(stalling), stalling))
	if stalling.Status.Phase != virtv1.MigrationRunning {
		t.Fatalf("the migration moving at 1 MiB/s: %s after 5 s, want Running", stalling.Status.Phase)
	}
	frozen := w.signalTargetQEMU(ctx, t, stalling, syscall.SIGSTOP)
	// The buffers fill within about 10 s at 1 MiB/s, then 3 s pass without
	// progress and the source aborts; the target's libvirtd ends its side
	// only once its QEMU runs again (or the source gives up waiting, after
	// a minute).
	time.Sleep(15 * time.Second)
	for _, pid := range frozen {
		must(t, syscall.Kill(pid, syscall.SIGCONT))
	}
	stalled := w.waitMigration(ctx, t, vm, virtv1.MigrationFailed)
	ms = stalled.Status.MigrationState
	t.Logf("stalled: %+v", ms)
	if !strings.Contains(ms.FailureReason, "(progress timeout 3s)") || ms.MigrationConfiguration == nil ||
		ms.MigrationConfiguration.ProgressTimeout == nil || *ms.MigrationConfiguration.ProgressTimeout != 3 {
		t.Errorf("failure reason %q, configuration %+v: want the CR's progress timeout of 3 s", ms.FailureReason, ms.MigrationConfiguration)
	}
	w.stillOnSource(ctx, t, vm, src, srcLog, stalled)
	updateKubeVirt(ctx, t, w, kvKey, func(kv *virtv1.KubeVirt) { kv.Spec.Configuration.MigrationConfiguration = nil })

	// migrate-cancel while it runs: 60 s per GB now, still 1 MiB/s.
	timeout = 60
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(policy), policy))
	policy.Spec.CompletionTimeoutPerGiB = &timeout
	must(t, w.c.Update(ctx, policy))
	w.virtctl(ctx, t, "migrate", vm.Name, "-n", vm.Namespace)
	running := w.waitMigration(ctx, t, vm, virtv1.MigrationRunning)
	time.Sleep(2 * time.Second) // memory is moving
	w.virtctl(ctx, t, "migrate-cancel", vm.Name, "-n", vm.Namespace)
	eventually(ctx, t, "the cancelled migration gone", func() (bool, string) {
		err := w.c.Get(ctx, client.ObjectKeyFromObject(running), &virtv1.VirtualMachineInstanceMigration{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	v := w.vmiOf(ctx, t, vm)
	ms = v.Status.MigrationState
	t.Logf("cancelled: %+v", ms)
	if ms.MigrationUID != running.UID || !ms.Failed || !ms.AbortRequested || ms.AbortStatus != virtv1.MigrationAbortSucceeded {
		t.Errorf("migrationState after the cancel = %+v", ms)
	}
	w.stillOnSource(ctx, t, vm, src, srcLog, running)
	w.deleteVM(ctx, t, vm)
}

// A migration that cannot converge in pre-copy switches to post-copy when
// a MigrationPolicy allows it, and completes with the guest beating on the
// target, where the node lets the non-root QEMU of a launcher use
// userfaultfd (vm.unprivileged_userfaultfd=1, as KubeVirt requires);
// elsewhere it fails saying so, the guest going on at the source. A
// paused guest migrates paused, stays paused on its new node, and beats
// again when unpaused there.
func TestMigrationPostCopyAndPaused(t *testing.T) {
	w := up(t, nodeName("a"), nodeName("b"))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	vm, src, srcLog := w.tinyReady(ctx, t)

	// 1 MiB/s with 3 s per GB: pre-copy cannot make it, post-copy may
	// take over at the completion timeout.
	timeout := int64(3)
	policy := &migrationsv1.MigrationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "post-copy"}, Spec: migrationsv1.MigrationPolicySpec{
		AllowPostCopy:           new(true),
		BandwidthPerMigration:   resource.NewQuantity(1<<20, resource.BinarySI),
		CompletionTimeoutPerGiB: &timeout,
		Selectors:               &migrationsv1.Selectors{VirtualMachineInstanceSelector: migrationsv1.LabelSelector{"kubevirt.io/vm": "tiny"}},
	}}
	must(t, w.c.Create(ctx, policy))
	w.virtctl(ctx, t, "migrate", vm.Name, "-n", vm.Namespace)
	cur, logOf := src, srcLog
	if b, err := os.ReadFile("/proc/sys/vm/unprivileged_userfaultfd"); err == nil && strings.TrimSpace(string(b)) == "1" {
		post := w.waitMigration(ctx, t, vm, virtv1.MigrationSucceeded)
		cur = w.waitVMI(ctx, t, vm, "on the other node", func(v *virtv1.VirtualMachineInstance) bool {
			return v.Status.NodeName != src.Status.NodeName && v.Status.MigrationState != nil && v.Status.MigrationState.Completed
		})
		if ms := cur.Status.MigrationState; ms.Mode != virtv1.MigrationPostCopy || ms.Failed || ms.MigrationPolicyName == nil || *ms.MigrationPolicyName != "post-copy" {
			t.Errorf("the post-copy migration's state: %+v", ms)
		}
		logOf = filepath.Join(w.launcherFolder(ctx, t, src, post.UID), contract.SerialLog)
		first := firstHeartbeat(ctx, t, logOf)
		if last := lastHeartbeat(t, srcLog); first < last || first > last+30 {
			t.Errorf("heartbeat: last %d on the source, first %d on the target: not a continuation", last, first)
		}
	} else {
		refused := w.waitMigration(ctx, t, vm, virtv1.MigrationFailed)
		if ms := refused.Status.MigrationState; ms == nil || !strings.Contains(ms.FailureReason, "Postcopy is not supported") {
			t.Errorf("post-copy where the node forbids userfaultfd: %+v", ms)
		}
		w.stillOnSource(ctx, t, vm, src, srcLog, refused)
	}
	must(t, w.c.Delete(ctx, policy))

	// Paused, then migrated back.
	w.virtctl(ctx, t, "pause", "vmi", vm.Name, "-n", vm.Namespace)
	paused := func(v *virtv1.VirtualMachineInstance) bool {
		for _, c := range v.Status.Conditions {
			if c.Type == virtv1.VirtualMachineInstancePaused && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	}
	w.waitVMI(ctx, t, vm, "paused", paused)
	before := lastHeartbeat(t, logOf)
	w.virtctl(ctx, t, "migrate", vm.Name, "-n", vm.Namespace)
	back := w.waitMigration(ctx, t, vm, virtv1.MigrationSucceeded)
	home := w.waitVMI(ctx, t, vm, "on the other node, paused", func(v *virtv1.VirtualMachineInstance) bool {
		return v.Status.NodeName != cur.Status.NodeName && v.Status.MigrationState != nil && v.Status.MigrationState.MigrationUID == back.UID &&
			v.Status.MigrationState.Completed && paused(v)
	})
	homeLog := filepath.Join(w.launcherFolder(ctx, t, cur, back.UID), contract.SerialLog)
	time.Sleep(3 * time.Second)
	if n := heartbeatsIn(t, homeLog); n != 0 {
		t.Errorf("the paused guest beat %d times on its new node before it was unpaused", n)
	}
	w.virtctl(ctx, t, "unpause", "vmi", vm.Name, "-n", vm.Namespace)
	w.waitVMI(ctx, t, vm, "unpaused", func(v *virtv1.VirtualMachineInstance) bool { return !paused(v) })
	if first := firstHeartbeat(ctx, t, homeLog); first < before || first > before+30 {
		t.Errorf("heartbeat: %d when paused, first %d after the unpause on the new node: not a continuation", before, first)
	}
	t.Logf("paused migration to %s: %+v", home.Status.NodeName, home.Status.MigrationState)
	w.deleteVM(ctx, t, vm)
}

// targetPods are mig's target pods (labelled with its UID).
func (w *world) targetPods(ctx context.Context, t *testing.T, mig *virtv1.VirtualMachineInstanceMigration) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	must(t, w.c.List(ctx, &pods, client.InNamespace(mig.Namespace), client.MatchingLabels{virtv1.MigrationJobLabel: string(mig.UID)}))
	return pods.Items
}

// signalTargetQEMU sends sig to the guest's QEMU in mig's target launcher
// pod (found by the pod's UID, which names its folder) and returns the
// PIDs it signalled.
func (w *world) signalTargetQEMU(ctx context.Context, t *testing.T, mig *virtv1.VirtualMachineInstanceMigration, sig syscall.Signal) []int {
	t.Helper()
	var pids []int
	eventually(ctx, t, "the target QEMU of migration "+mig.Name, func() (bool, string) {
		pods := w.targetPods(ctx, t, mig)
		if len(pods) != 1 {
			return false, fmt.Sprintf("%d target pods", len(pods))
		}
		procs, err := launcherProcesses(string(pods[0].UID))
		if err != nil {
			return false, err.Error()
		}
		pids = pids[:0]
		for _, p := range procs {
			if isVictim(victimQEMU, p) {
				pids = append(pids, p.PID)
			}
		}
		return len(pids) > 0, fmt.Sprint(procs)
	})
	for _, pid := range pids {
		t.Logf("%s QEMU %d", sig, pid)
		must(t, syscall.Kill(pid, sig))
	}
	return pids
}

// deleteVM deletes vm and waits until its VMI and pods are gone, and its
// launchers' folders: the pods' folders on the nodes.
func (w *world) deleteVM(ctx context.Context, t *testing.T, vm *virtv1.VirtualMachine) {
	t.Helper()
	must(t, w.c.Delete(ctx, vm))
	eventually(ctx, t, "the VM's VMI, pods and launcher folders gone", func() (bool, string) {
		var pods corev1.PodList
		must(t, w.c.List(ctx, &pods, client.InNamespace(vm.Namespace)))
		err := w.c.Get(ctx, client.ObjectKeyFromObject(vm), &virtv1.VirtualMachineInstance{})
		left := w.podFoldersLeft(ctx, t)
		return len(pods.Items) == 0 && apierrors.IsNotFound(err) && len(left) == 0,
			fmt.Sprintf("%d pods, VMI: %v, folders %v", len(pods.Items), err, left)
	})
}

// stillOnSource checks that the guest goes on on the source after mig did
// not complete, and that mig's target pod and its folder went.
func (w *world) stillOnSource(ctx context.Context, t *testing.T, vm *virtv1.VirtualMachine, src *virtv1.VirtualMachineInstance, srcLog string, mig *virtv1.VirtualMachineInstanceMigration) {
	t.Helper()
	v := w.vmiOf(ctx, t, vm)
	if v.Status.Phase != virtv1.Running || v.Status.NodeName != src.Status.NodeName || v.Status.Interfaces[0].IP != src.Status.Interfaces[0].IP {
		t.Errorf("after the aborted migration: phase %s on %s at %v, want Running on %s", v.Status.Phase, v.Status.NodeName, v.Status.Interfaces, src.Status.NodeName)
	}
	before := lastHeartbeat(t, srcLog)
	eventually(ctx, t, "the heartbeat going on on the source", func() (bool, string) {
		n := lastHeartbeat(t, srcLog)
		return n > before+1, strconv.Itoa(n)
	})
	httpAnswers(ctx, t, "http://"+src.Status.Interfaces[0].IP+"/", "tiny")
	eventually(ctx, t, "the target pod of "+mig.Name+" gone", func() (bool, string) {
		pods := w.targetPods(ctx, t, mig)
		return len(pods) == 0, fmt.Sprintf("%d pods", len(pods))
	})
	eventually(ctx, t, "the target launcher's folder of "+mig.Name+" gone", func() (bool, string) {
		left := w.podFoldersLeft(ctx, t)
		return len(left) == 0, fmt.Sprint(left)
	})
}

// waitMigration waits until the newest migration of vm is in phase.
func (w *world) waitMigration(ctx context.Context, t *testing.T, vm *virtv1.VirtualMachine, phase virtv1.VirtualMachineInstanceMigrationPhase) *virtv1.VirtualMachineInstanceMigration {
	t.Helper()
	var got *virtv1.VirtualMachineInstanceMigration
	eventually(ctx, t, "the migration of "+vm.Name+" "+string(phase), func() (bool, string) {
		var list virtv1.VirtualMachineInstanceMigrationList
		must(t, w.c.List(ctx, &list, client.InNamespace(vm.Namespace)))
		got = nil
		for i := range list.Items {
			m := &list.Items[i]
			// The newest; of two created in one second, the one still running.
			if m.Spec.VMIName == vm.Name && (got == nil || got.CreationTimestamp.Before(&m.CreationTimestamp) ||
				(got.CreationTimestamp.Equal(&m.CreationTimestamp) && got.IsFinal() && !m.IsFinal())) {
				got = m
			}
		}
		if got == nil {
			return false, "no migration"
		}
		if got.Status.Phase == virtv1.MigrationFailed && phase != virtv1.MigrationFailed {
			t.Fatalf("migration %s failed: %+v", got.Name, got.Status.MigrationState)
		}
		return got.Status.Phase == phase, fmt.Sprintf("%s: %s %+v", got.Name, got.Status.Phase, got.Status.MigrationState)
	})
	return got
}

func (w *world) vmiOf(ctx context.Context, t *testing.T, vm *virtv1.VirtualMachine) *virtv1.VirtualMachineInstance {
	t.Helper()
	v := &virtv1.VirtualMachineInstance{}
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(vm), v))
	return v
}

func (w *world) waitVMI(ctx context.Context, t *testing.T, vm *virtv1.VirtualMachine, what string, ok func(*virtv1.VirtualMachineInstance) bool) *virtv1.VirtualMachineInstance {
	t.Helper()
	var v *virtv1.VirtualMachineInstance
	eventually(ctx, t, "VMI "+vm.Name+" "+what, func() (bool, string) {
		v = w.vmiOf(ctx, t, vm)
		return ok(v), fmt.Sprintf("phase %s node %s interfaces %+v", v.Status.Phase, v.Status.NodeName, v.Status.Interfaces)
	})
	return v
}

// watchHTTP asks the VMI's web server every 100 ms at the address the VMI
// reports, until the returned function is called: it returns the answers,
// the failed requests and the heartbeats the pages showed, in order.
func (w *world) watchHTTP(ctx context.Context, t *testing.T, vm *virtv1.VirtualMachine) func() (int, []string, []int) {
	t.Helper()
	stop := make(chan struct{})
	var mu sync.Mutex
	var errs []string
	var beats []int
	answers := 0
	page := regexp.MustCompile(`heartbeat=(\d+)`)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cl := &http.Client{Timeout: time.Second}
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			v := &virtv1.VirtualMachineInstance{}
			if err := w.c.Get(ctx, client.ObjectKeyFromObject(vm), v); err != nil || len(v.Status.Interfaces) == 0 {
				continue
			}
			resp, err := cl.Get("http://" + v.Status.Interfaces[0].IP + "/")
			mu.Lock()
			if err != nil {
				errs = append(errs, time.Now().Format("15:04:05.000")+" "+err.Error())
			} else {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if m := page.FindSubmatch(b); m != nil {
					n, _ := strconv.Atoi(string(m[1]))
					beats = append(beats, n)
					answers++
				} else {
					errs = append(errs, fmt.Sprintf("%d %q", resp.StatusCode, b))
				}
			}
			mu.Unlock()
		}
	}()
	return func() (int, []string, []int) {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		if len(beats) == 0 {
			t.Fatalf("the web server never answered: %v", errs)
		}
		return answers, errs, beats
	}
}

var heartbeat = regexp.MustCompile(`^` + testguest.HeartbeatLine + ` (\d+)\s*$`)

// lastHeartbeat is the highest heartbeat count in a console log so far.
func lastHeartbeat(t *testing.T, path string) int {
	t.Helper()
	last := 0
	for _, l := range strings.Split(testguest.Tail(path, 2000), "\n") {
		if m := heartbeat.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			n, _ := strconv.Atoi(m[1])
			last = max(last, n)
		}
	}
	return last
}

// firstHeartbeat waits for the first heartbeat line in a console log.
func firstHeartbeat(ctx context.Context, t *testing.T, path string) int {
	t.Helper()
	line, err := testguest.WaitLine(ctx, path, heartbeat)
	must(t, err)
	n, _ := strconv.Atoi(heartbeat.FindStringSubmatch(strings.TrimSpace(line))[1])
	return n
}

// A node drain (cordon, then evict every pod, retrying refused evictions
// as kubectl drain does) of the node of a VM with evictionStrategy
// LiveMigrate migrates the VM away instead of stopping it: the eviction
// webhook refuses its launcher pod's eviction and records the drain, the
// evacuation controller creates the migration, and the drain ends once the
// source pod has ended.
func TestDrain(t *testing.T) {
	w := up(t, nodeName("a"), nodeName("b"))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	vm := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
	live := virtv1.EvictionStrategyLiveMigrate
	vm.Spec.Template.Spec.EvictionStrategy = &live
	must(t, w.c.Create(ctx, vm))
	src := w.waitRunning(ctx, t, vm)
	srcLog := w.serialLog(ctx, t, src)
	waitFile(ctx, t, srcLog, testguest.ReadyMarker)
	node := src.Status.NodeName
	// The drain evicts the source pod, and its folder goes with it: take
	// the source's count now, far enough from a fresh boot's to tell one.
	var before int
	eventually(ctx, t, "a few heartbeats on the source", func() (bool, string) {
		before = lastHeartbeat(t, srcLog)
		return before >= 3, strconv.Itoa(before)
	})

	var n corev1.Node
	must(t, w.c.Get(ctx, client.ObjectKey{Name: node}, &n))
	n.Spec.Unschedulable = true
	must(t, w.c.Update(ctx, &n))
	refused := 0
	eventually(ctx, t, "node "+node+" drained", func() (bool, string) {
		var pods corev1.PodList
		must(t, w.c.List(ctx, &pods, client.MatchingFields{"spec.nodeName": node}))
		left := []string{}
		for i := range pods.Items {
			p := &pods.Items[i]
			err := w.c.SubResource("eviction").Create(ctx, p, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}})
			switch {
			case apierrors.IsTooManyRequests(err):
				refused++
				left = append(left, p.Name+": "+err.Error())
			case err != nil && !apierrors.IsNotFound(err):
				t.Fatalf("evicting %s: %v", p.Name, err)
			default:
				left = append(left, p.Name+": evicted")
			}
		}
		return len(pods.Items) == 0, strings.Join(left, "; ")
	})
	v := w.vmiOf(ctx, t, vm)
	t.Logf("drained after %d refused evictions; the VMI runs on %s at %v, evacuationNodeName %q", refused, v.Status.NodeName, v.Status.Interfaces, v.Status.EvacuationNodeName)
	if refused == 0 || v.Status.Phase != virtv1.Running || v.Status.NodeName == node || v.UID != src.UID {
		t.Fatalf("after the drain: %d refusals, VMI %s phase %s on %s, want the same VMI running on the other node", refused, v.UID, v.Status.Phase, v.Status.NodeName)
	}
	var migs virtv1.VirtualMachineInstanceMigrationList
	must(t, w.c.List(ctx, &migs, client.InNamespace(vm.Namespace)))
	if len(migs.Items) != 1 || migs.Items[0].Annotations[virtv1.EvacuationMigrationAnnotation] != node || migs.Items[0].Status.Phase != virtv1.MigrationSucceeded {
		t.Errorf("migrations after the drain: %+v", migs.Items)
	}
	eventually(ctx, t, "evacuationNodeName cleared", func() (bool, string) {
		v := w.vmiOf(ctx, t, vm)
		return v.Status.EvacuationNodeName == "", v.Status.EvacuationNodeName
	})
	// The guest went on: its heartbeat continues in the target's console log.
	dstLog := filepath.Join(w.launcherFolder(ctx, t, v, migs.Items[0].UID), contract.SerialLog)
	if first := firstHeartbeat(ctx, t, dstLog); first < before {
		t.Errorf("heartbeat %d on the target after %d on the source before the drain: the guest restarted", first, before)
	}
	httpAnswers(ctx, t, "http://"+v.Status.Interfaces[0].IP+"/", "tiny")

	// KubeVirt's drain taint empties a node without any eviction: node
	// a back in service, the taint on the VM's node moves it back.
	must(t, w.c.Get(ctx, client.ObjectKey{Name: node}, &n))
	n.Spec.Unschedulable = false
	must(t, w.c.Update(ctx, &n))
	other := v.Status.NodeName
	beforeTaint := lastHeartbeat(t, dstLog)
	var on corev1.Node
	must(t, w.c.Get(ctx, client.ObjectKey{Name: other}, &on))
	on.Spec.Taints = append(on.Spec.Taints, corev1.Taint{Key: "kubevirt.io/drain", Value: "draining", Effect: corev1.TaintEffectNoSchedule})
	must(t, w.c.Update(ctx, &on))
	eventually(ctx, t, "the VM back on "+node+" by the drain taint of "+other, func() (bool, string) {
		v := w.vmiOf(ctx, t, vm)
		return v.Status.NodeName == node && v.Status.MigrationState != nil && v.Status.MigrationState.Completed,
			fmt.Sprintf("on %s, migration %+v", v.Status.NodeName, v.Status.MigrationState)
	})
	// The VMI says the migration completed a moment before the migration
	// controller marks the migration Succeeded.
	var byTaint []virtv1.VirtualMachineInstanceMigration
	eventually(ctx, t, "one evacuation migration from "+other+" Succeeded", func() (bool, string) {
		must(t, w.c.List(ctx, &migs, client.InNamespace(vm.Namespace)))
		byTaint = nil
		var seen []string
		for _, m := range migs.Items {
			seen = append(seen, fmt.Sprintf("%s %s evacuating %q", m.Name, m.Status.Phase, m.Annotations[virtv1.EvacuationMigrationAnnotation]))
			if m.Annotations[virtv1.EvacuationMigrationAnnotation] == other && m.Status.Phase == virtv1.MigrationSucceeded {
				byTaint = append(byTaint, m)
			}
		}
		return len(byTaint) == 1, strings.Join(seen, "; ")
	})
	back := filepath.Join(w.launcherFolder(ctx, t, w.vmiOf(ctx, t, vm), byTaint[0].UID), contract.SerialLog)
	if first := firstHeartbeat(ctx, t, back); first < beforeTaint {
		t.Errorf("heartbeat %d back on %s after %d before the taint: the guest restarted", first, node, beforeTaint)
	}
	must(t, w.c.Get(ctx, client.ObjectKey{Name: other}, &on))
	on.Spec.Taints = slices.DeleteFunc(on.Spec.Taints, func(t corev1.Taint) bool { return t.Key == "kubevirt.io/drain" })
	must(t, w.c.Update(ctx, &on))
	w.deleteVM(ctx, t, vm)
}

// swapMigrationCert gives node's handler a migration certificate for node
// as instead of its own, issued by the cluster's CA, and returns what puts
// its own back. The handlers read their certificate files again every
// 10 s (deploy/certs/certfiles), so each change waits that long.
func (w *world) swapMigrationCert(t *testing.T, node, as string) (restore func()) {
	t.Helper()
	pki := w.cfg.PKI()
	certFile, keyFile := pki.Cert(cluster.MigrationCertName(node)), pki.Key(cluster.MigrationCertName(node))
	read := func(f string) []byte {
		b, err := os.ReadFile(f)
		must(t, err)
		return b
	}
	write := func(f string, b []byte) {
		must(t, os.WriteFile(f+".swap", b, 0o600))
		must(t, os.Rename(f+".swap", f))
	}
	ownCert, ownKey := read(certFile), read(keyFile)
	ca, err := certs.Parse(read(pki.CACert()), read(pki.CAKey()))
	must(t, err)
	other, err := ca.Issue(certs.NodeRequest(as, 24*time.Hour), time.Now())
	must(t, err)
	// The handlers read their certificate files again once a read is older than this.
	const reread = certfiles.DefaultInterval + time.Second
	write(keyFile, other.KeyPEM())
	write(certFile, other.CertPEM())
	time.Sleep(reread)
	return func() {
		write(keyFile, ownKey)
		write(certFile, ownCert)
		time.Sleep(reread)
	}
}

// heartbeatsIn counts the heartbeat lines in the console log at path.
func heartbeatsIn(t *testing.T, path string) int {
	t.Helper()
	n := 0
	for _, l := range strings.Split(testguest.Tail(path, 1<<20), "\n") {
		if heartbeat.MatchString(strings.TrimSpace(l)) {
			n++
		}
	}
	return n
}

// tinyReady starts the example VM and waits until its guest is ready; it
// returns the VM, its VMI and the console log of its launcher.
func (w *world) tinyReady(ctx context.Context, t *testing.T) (*virtv1.VirtualMachine, *virtv1.VirtualMachineInstance, string) {
	t.Helper()
	vm := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
	must(t, w.c.Create(ctx, vm))
	src := w.waitRunning(ctx, t, vm)
	srcLog := w.serialLog(ctx, t, src)
	waitFile(ctx, t, srcLog, testguest.ReadyMarker)
	return vm, src, srcLog
}
