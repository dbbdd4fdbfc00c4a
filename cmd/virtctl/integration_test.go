package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
)

// The virtctl binary against a real apiserver and aggregator: each command
// changes what KubeVirt's would, refusals say what to do, and console and
// vnc carry bytes to the node and back.
func TestVirtctlBinary(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()

	// ok runs virtctl as alice and wants exit 0 and stdout.
	ok := func(t *testing.T, stdout string, args ...string) {
		t.Helper()
		code, out, errOut := w.virtctl(t, w.alice, args...)
		if code != 0 {
			t.Fatalf("virtctl %v: exit %d\n%s", args, code, errOut)
		}
		if stdout != "" && out != stdout {
			t.Errorf("virtctl %v: stdout %q, want %q", args, out, stdout)
		}
	}
	// fails runs virtctl as the user of kubeconfig and wants exit 1 with
	// each of msgs in stderr.
	fails := func(t *testing.T, kubeconfig string, msgs []string, args ...string) {
		t.Helper()
		code, out, errOut := w.virtctl(t, kubeconfig, args...)
		if code != 1 {
			t.Errorf("virtctl %v: exit %d, want 1; stdout %q", args, code, out)
		}
		for _, m := range msgs {
			if !strings.Contains(errOut, m) {
				t.Errorf("virtctl %v: stderr lacks %q:\n%s", args, m, errOut)
			}
		}
	}
	runStrategy := func(t *testing.T, ns, name string) virtv1.VirtualMachineRunStrategy {
		t.Helper()
		return *w.getVM(t, ns, name).Spec.RunStrategy
	}

	t.Run("version", func(t *testing.T) {
		for _, kc := range []string{w.alice, w.bob} {
			code, out, errOut := w.virtctl(t, kc, "version")
			if code != 0 || !strings.HasPrefix(out, "Client Version: version.Info{GitVersion:") ||
				!strings.Contains(out, "\nServer Version: version.Info{GitVersion:\"v9.9.9-test\", ") {
				t.Errorf("version: exit %d, stdout %q, stderr %q", code, out, errOut)
			}
		}
	})

	t.Run("start, stop and restart", func(t *testing.T) {
		w.createVM(t, "default", "vm1", virtv1.RunStrategyHalted)
		ok(t, "Dry Run execution\nVM vm1 was scheduled to start\n", "start", "vm1", "--dry-run")
		if rs := runStrategy(t, "default", "vm1"); rs != virtv1.RunStrategyHalted {
			t.Errorf("runStrategy %s after a dry run", rs)
		}
		ok(t, "VM vm1 was scheduled to start\n", "start", "vm1")
		if rs := runStrategy(t, "default", "vm1"); rs != virtv1.RunStrategyAlways {
			t.Errorf("runStrategy %s after start, want Always", rs)
		}
		fails(t, w.alice, []string{"Error: cannot start VirtualMachine default/vm1: ", "Always does not support manual start requests"}, "start", "vm1")
		ok(t, "VM vm1 was scheduled to stop\n", "stop", "vm1")
		if rs := runStrategy(t, "default", "vm1"); rs != virtv1.RunStrategyHalted {
			t.Errorf("runStrategy %s after stop, want Halted", rs)
		}

		w.createVM(t, "default", "manual", virtv1.RunStrategyManual)
		vmi := w.runVMI(t, "manual", virtv1.Running)
		ok(t, "VM manual was scheduled to stop\n", "stop", "manual", "--force", "--grace-period=0")
		want := []virtv1.VirtualMachineStateChangeRequest{{Action: virtv1.StopRequest, UID: &vmi.UID}}
		if diff := cmp.Diff(want, w.getVM(t, "default", "manual").Status.StateChangeRequests); diff != "" {
			t.Errorf("stateChangeRequests after a force stop (-want +got):\n%s", diff)
		}
		if g := w.getVMI(t, "manual").Spec.TerminationGracePeriodSeconds; g == nil || *g != 0 {
			t.Errorf("VMI terminationGracePeriodSeconds %v, want 0", g)
		}

		w.createVM(t, "default", "always", virtv1.RunStrategyAlways)
		vmi = w.runVMI(t, "always", virtv1.Running)
		ok(t, "VM always was scheduled to restart\n", "restart", "always")
		want = []virtv1.VirtualMachineStateChangeRequest{{Action: virtv1.StopRequest, UID: &vmi.UID}, {Action: virtv1.StartRequest}}
		if diff := cmp.Diff(want, w.getVM(t, "default", "always").Status.StateChangeRequests); diff != "" {
			t.Errorf("stateChangeRequests after restart (-want +got):\n%s", diff)
		}
		fails(t, w.alice, []string{"Must both use --force=true and set --grace-period."}, "restart", "always", "--force")
	})

	t.Run("refusals say what to do", func(t *testing.T) {
		w.createVM(t, "default", "bobs", virtv1.RunStrategyHalted)
		// --kubeconfig beats $KUBECONFIG (alice's here).
		fails(t, w.alice, []string{
			`User "bob" cannot update resource "virtualmachines/start" in API group "subresources.kubevirt.io" in the namespace "default"`,
			"kubectl auth can-i update virtualmachines.subresources.kubevirt.io --subresource=start -n default",
			"kubectl create rolebinding bob-virtctl --clusterrole=kubevirt.io:subresources-edit --user=bob -n default",
		}, "--kubeconfig", w.bob, "start", "bobs")
		if rs := runStrategy(t, "default", "bobs"); rs != virtv1.RunStrategyHalted {
			t.Errorf("bob started it: %s", rs)
		}
		fails(t, w.alice, []string{`virtualmachine.kubevirt.io "nosuchvm" not found`, "`kubectl get vms -n default` lists them"}, "stop", "nosuchvm")
		fails(t, w.alice, []string{`virtualmachineinstance.kubevirt.io "nosuchvm" not found`, "`virtctl start nosuchvm -n default` starts a VM"}, "pause", "vm", "nosuchvm")
		fails(t, w.bob, []string{`cannot get resource "virtualmachineinstances/console"`, "--clusterrole=kubevirt.io:subresources-edit --user=bob"}, "console", "bobs")
	})

	t.Run("namespaces: -n, the context's, and one without RBAC", func(t *testing.T) {
		w.createVM(t, "team", "t1", virtv1.RunStrategyHalted)
		ok(t, "VM t1 was scheduled to start\n", "-n", "team", "start", "t1")
		if rs := runStrategy(t, "team", "t1"); rs != virtv1.RunStrategyAlways {
			t.Errorf("runStrategy %s after start -n team", rs)
		}
		code, out, errOut := w.virtctl(t, w.aliceNS, "stop", "t1")
		if code != 0 || out != "VM t1 was scheduled to stop\n" {
			t.Errorf("stop in the context's namespace: exit %d, %q, %q", code, out, errOut)
		}
		if rs := runStrategy(t, "team", "t1"); rs != virtv1.RunStrategyHalted {
			t.Errorf("runStrategy %s after stop in the context's namespace", rs)
		}
		fails(t, w.alice, []string{`in the namespace "elsewhere"`, "-n elsewhere"}, "start", "t1", "-n", "elsewhere")
	})

	t.Run("pause, unpause and soft-reboot reach the node", func(t *testing.T) {
		w.runVMI(t, "guest", virtv1.Running)
		ok(t, "VMI guest was scheduled to pause\n", "pause", "vm", "guest")
		if st, _ := w.node.State("default", "guest"); !st.Paused {
			t.Error("the node did not pause the guest")
		}
		setPaused(t, w, "guest", true) // as the handler reports it
		fails(t, w.alice, []string{"VMI is already paused"}, "pause", "vmi", "guest")
		ok(t, "VMI guest was scheduled to unpause\n", "unpause", "vmi", "guest")
		setPaused(t, w, "guest", false)
		ok(t, "VMI guest was scheduled to soft-reboot\n", "soft-reboot", "guest")
		ok(t, "VMI guest was scheduled to reset\n", "reset", "guest")
		if st, _ := w.node.State("default", "guest"); st.Paused || st.SoftReboots != 1 || st.Resets != 1 {
			t.Errorf("node state %+v, want unpaused with one reboot and one reset", st)
		}
	})

	t.Run("migrate and migrate-cancel", func(t *testing.T) {
		w.createVM(t, "default", "mig", virtv1.RunStrategyAlways)
		w.runVMI(t, "mig", virtv1.Running)
		ok(t, "VM mig was scheduled to migrate\n", "migrate", "mig", "--addedNodeSelector", "zone=b")
		migrations := func() []virtv1.VirtualMachineInstanceMigration {
			var l virtv1.VirtualMachineInstanceMigrationList
			must(t, w.c.List(ctx, &l, client.InNamespace("default")))
			return l.Items
		}
		if m := migrations(); len(m) != 1 || m[0].Spec.VMIName != "mig" || m[0].Spec.AddedNodeSelector["zone"] != "b" {
			t.Fatalf("migrations %+v", m)
		}
		ok(t, "Dry Run execution\nVM mig was scheduled to migrate-cancel\n", "migrate-cancel", "mig", "--dry-run")
		if m := migrations(); len(m) != 1 {
			t.Fatalf("a dry-run cancel deleted the migration")
		}
		ok(t, "VM mig was scheduled to migrate-cancel\n", "migrate-cancel", "mig")
		if m := migrations(); len(m) != 0 {
			t.Errorf("migrations after cancel: %+v", m)
		}
		fails(t, w.alice, []string{"Found no migration to cancel for mig", "kubectl get vmims -n default"}, "migrate-cancel", "mig")
		fails(t, w.bob, []string{`cannot list resource "virtualmachineinstancemigrations" in API group "kubevirt.io"`,
			"kubectl auth can-i list virtualmachineinstancemigrations.kubevirt.io -n default"}, "migrate-cancel", "mig")
	})

	t.Run("addvolume and removevolume", func(t *testing.T) {
		must(t, w.c.Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}))
		w.createVM(t, "default", "hp", virtv1.RunStrategyAlways)
		w.runVMI(t, "hp", virtv1.Running)
		volumes := func() (template, vmi []string) {
			for _, v := range w.getVM(t, "default", "hp").Spec.Template.Spec.Volumes {
				template = append(template, v.Name)
			}
			for _, v := range w.getVMI(t, "hp").Spec.Volumes {
				vmi = append(vmi, v.Name)
			}
			return template, vmi
		}
		check := func(t *testing.T, wantTemplate, wantVMI []string) {
			t.Helper()
			tv, vv := volumes()
			if diff := cmp.Diff(wantTemplate, tv); diff != "" {
				t.Errorf("VM template volumes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantVMI, vv); diff != "" {
				t.Errorf("VMI volumes (-want +got):\n%s", diff)
			}
		}
		// The VM's template (its controller, not running here, hotplugs it
		// into the VMI).
		ok(t, "Successfully submitted add volume request to VM hp for volume data\n", "addvolume", "hp", "--volume-name=data", "--serial=DATA1")
		check(t, []string{"root", "data"}, []string{"root"})
		disks := w.getVM(t, "default", "hp").Spec.Template.Spec.Domain.Devices.Disks
		if len(disks) != 2 || disks[1].Serial != "DATA1" || disks[1].Disk == nil || disks[1].Disk.Bus != virtv1.DiskBusSCSI {
			t.Errorf("template disks %+v, want data on scsi with serial DATA1", disks)
		}
		ok(t, "Successfully submitted remove volume request to VM hp for volume data\n", "removevolume", "hp", "--volume-name=data")
		check(t, []string{"root"}, []string{"root"})
		ok(t, "", "addvolume", "hp", "--volume-name=data", "--persist")
		check(t, []string{"root", "data"}, []string{"root"})
		ok(t, "", "removevolume", "hp", "--volume-name=data", "--persist")
		check(t, []string{"root"}, []string{"root"})
		// A VMI that no VM owns gets it itself.
		w.runVMI(t, "solo", virtv1.Running)
		ok(t, "", "addvolume", "solo", "--volume-name=data")
		if vols := w.getVMI(t, "solo").Spec.Volumes; len(vols) != 2 || vols[1].Name != "data" {
			t.Errorf("the standalone VMI's volumes: %+v, want data added", vols)
		}
		fails(t, w.alice, []string{"Volume nope is not a DataVolume or PersistentVolumeClaim", "kubectl get pvc -n default"}, "addvolume", "hp", "--volume-name=nope")
	})

	t.Run("console echoes through the aggregator", func(t *testing.T) {
		w.runVMI(t, "tty", virtv1.Running)
		p := w.start(t, w.alice, "console", "--timeout", "1", "tty")
		p.write(t, "hello\r\n")
		p.waitStdout(t, "hello\r\n")
		p.write(t, "\x00\xff\x1b[A")
		p.waitStdout(t, "hello\r\n\x00\xff\x1b[A")
		p.write(t, "\x1d")
		if code := p.wait(t); code != 0 {
			t.Errorf("exit %d after ^]; stderr:\n%s", code, p.stderr)
		}
		if !strings.Contains(p.stderr.String(), "Successfully connected to tty console. The escape sequence is ^]") {
			t.Errorf("stderr:\n%s", p.stderr)
		}
	})

	t.Run("console waits for the VMI to run", func(t *testing.T) {
		vmi := w.runVMI(t, "late", virtv1.Scheduling)
		p := w.start(t, w.alice, "console", "--timeout=1", "late")
		p.waitStderr(t, "Waiting for VirtualMachineInstance late: ")
		vmi.Status.Phase, vmi.Status.NodeName = virtv1.Running, "node-a"
		w.node.Set("default", "late", nodeapi.FakeVMI{})
		must(t, w.c.Status().Update(ctx, vmi))
		p.waitStderr(t, "Successfully connected to late console.")
		p.write(t, "up?\n")
		p.waitStdout(t, "up?\n")
		p.write(t, "\x1d")
		if code := p.wait(t); code != 0 {
			t.Errorf("exit %d; stderr:\n%s", code, p.stderr)
		}
	})

	t.Run("vnc proxy", func(t *testing.T) {
		w.runVMI(t, "screen", virtv1.Running)
		p := w.start(t, w.alice, "vnc", "--proxy-only", "screen")
		var port struct{ Port int }
		line := p.waitLine(t)
		if err := json.Unmarshal([]byte(line), &port); err != nil || port.Port == 0 {
			t.Fatalf("first stdout line %q, want {\"port\":N}", line)
		}
		for i := 0; i < 2; i++ { // the first stream is opened before listening, the second on connect
			c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port.Port))
			must(t, err)
			msg := fmt.Sprintf("RFB 003.008 #%d\n", i)
			_, err = c.Write([]byte(msg))
			must(t, err)
			got := make([]byte, len(msg))
			must(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
			_, err = io.ReadFull(c, got)
			must(t, err)
			if string(got) != msg {
				t.Errorf("client %d: echo %q, want %q", i, got, msg)
			}
			must(t, c.Close())
		}
		must(t, p.cmd.Process.Signal(os.Interrupt))
		if code := p.wait(t); code != 0 {
			t.Errorf("exit %d after Ctrl+C; stderr:\n%s", code, p.stderr)
		}
	})
}

func setPaused(t *testing.T, w *world, name string, paused bool) {
	t.Helper()
	vmi := w.getVMI(t, name)
	vmi.Status.Conditions = nil
	if paused {
		vmi.Status.Conditions = []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstancePaused, Status: corev1.ConditionTrue}}
	}
	must(t, w.c.Status().Update(context.Background(), vmi))
}

// proc is a virtctl running in the background with piped stdio.
type proc struct {
	cmd            *exec.Cmd
	stdin          io.WriteCloser
	stdout, stderr *syncBuffer
	done           chan struct{}
}

// start runs virtctl as the user of kubeconfig in the background; it is
// killed when the test ends if it has not ended.
func (w *world) start(t *testing.T, kubeconfig string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: w.command(kubeconfig, args...), stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	var err error
	p.stdin, err = p.cmd.StdinPipe()
	must(t, err)
	must(t, p.cmd.Start())
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *proc) write(t *testing.T, s string) {
	t.Helper()
	_, err := p.stdin.Write([]byte(s))
	must(t, err)
}

// waitFor polls cond for up to 30 s, failing with what the process said.
func (p *proc) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.EventuallyEvery(testenv.Within(t, 30*time.Second), t, 10*time.Millisecond, what, func() (bool, string) {
		return cond(), fmt.Sprintf("stdout %q, stderr:\n%s", p.stdout, p.stderr)
	})
}

func (p *proc) waitStdout(t *testing.T, want string) {
	t.Helper()
	p.waitFor(t, fmt.Sprintf("stdout %q", want), func() bool { return p.stdout.String() == want })
}

func (p *proc) waitStderr(t *testing.T, part string) {
	t.Helper()
	p.waitFor(t, fmt.Sprintf("stderr with %q", part), func() bool { return strings.Contains(p.stderr.String(), part) })
}

// waitLine returns the first line of stdout.
func (p *proc) waitLine(t *testing.T) string {
	t.Helper()
	p.waitFor(t, "a line on stdout", func() bool { return strings.Contains(p.stdout.String(), "\n") })
	line, _, _ := strings.Cut(p.stdout.String(), "\n")
	return line
}

// wait returns the exit code, failing if the process does not end in 30 s.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(30 * time.Second):
		t.Fatalf("virtctl did not end; stdout %q, stderr:\n%s", p.stdout, p.stderr)
		return -1
	}
}
