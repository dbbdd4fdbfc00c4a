package node_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/local/node"
	"github.com/virtkit/virtkit/local/node/nodefake"
)

// fakeNode is a Provider on fakes, with the pods' notified statuses.
type fakeNode struct {
	t      *testing.T
	p      *node.Provider
	runner *nodefake.Runner
	net    *nodefake.Network
	client *fake.Clientset
	cfg    node.Config
}

func newFakeNode(t *testing.T, stateDir string, objs ...runtime.Object) *fakeNode {
	t.Helper()
	f := &fakeNode{t: t, runner: nodefake.NewRunner(t.TempDir()), net: &nodefake.Network{}, client: fake.NewClientset(objs...)}
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "virt-launcher"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.cfg = node.Config{Name: "n1", StateDir: stateDir, BinDirs: []string{bin}, InternalIP: "192.0.2.10"}
	p, err := node.NewProvider(context.Background(), f.cfg, f.client,
		node.WithProcessRunner(f.runner), node.WithNetwork(f.net),
		node.WithImageStore(nodefake.Images{"example.com/disk:v1": t.TempDir()}),
		node.WithRestartBackoff(10*time.Millisecond, 50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	f.p = p
	return f
}

// wait polls the pod until cond holds.
func (f *fakeNode) wait(pod *corev1.Pod, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	f.t.Helper()
	var last *corev1.Pod
	testenv.EventuallyEvery(testenv.Within(f.t, 10*time.Second), f.t, 5*time.Millisecond, what, func() (bool, string) {
		if got, err := f.p.GetPod(context.Background(), pod.Namespace, pod.Name); err == nil {
			last = got
			return cond(got), fmt.Sprintf("status %+v", got.Status)
		}
		return false, fmt.Sprintf("status %+v", last)
	})
	return last
}

// started waits for the next process to start.
func (f *fakeNode) started() *nodefake.Process {
	f.t.Helper()
	select {
	case p := <-f.runner.Started():
		return p
	case <-time.After(10 * time.Second):
		f.t.Fatal("no process started")
		return nil
	}
}

func testPod(name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: "n1", RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "compute", Image: "example.com/launcher:v1",
				Command: []string{"virt-launcher", "--name", "$(VM)"}, Env: []corev1.EnvVar{{Name: "VM", Value: "vm1"}}}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func phase(want corev1.PodPhase) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool { return p.Status.Phase == want }
}

// ignoreTimes drops the times that depend on the clock.
var ignoreTimes = cmpopts.IgnoreTypes(metav1.Time{}, &metav1.Time{})

func TestPodRunsAndSucceeds(t *testing.T) {
	f := newFakeNode(t, t.TempDir())
	pod := testPod("ok", func(p *corev1.Pod) {
		p.Spec.Containers[0].TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	})
	if err := f.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	proc := f.started()
	if want := []string{"virt-launcher", "--name", "vm1"}; !cmp.Equal(proc.Spec.Args, want) {
		t.Errorf("args = %q, want %q (expanded)", proc.Spec.Args, want)
	}
	if want := filepath.Join(f.cfg.BinDirs[0], "virt-launcher"); proc.Spec.Path != want {
		t.Errorf("path = %s, want %s (the binary folder first)", proc.Spec.Path, want)
	}
	got := f.wait(pod, "Running", phase(corev1.PodRunning))
	if got.Status.PodIP != "10.0.0.2" || got.Status.HostIP != "192.0.2.10" || !got.Status.ContainerStatuses[0].Ready {
		t.Errorf("running pod: podIP %q hostIP %q ready %v", got.Status.PodIP, got.Status.HostIP, got.Status.ContainerStatuses[0].Ready)
	}

	term, err := proc.Mount(corev1.TerminationMessagePathDefault)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(term.Source, []byte("guest shut down"), 0o644); err != nil {
		t.Fatal(err)
	}
	proc.Exit(0)
	got = f.wait(pod, "Succeeded", phase(corev1.PodSucceeded))
	want := corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", Message: "guest shut down",
		ContainerID: got.Status.ContainerStatuses[0].ContainerID}
	if d := cmp.Diff(&want, got.Status.ContainerStatuses[0].State.Terminated, ignoreTimes); d != "" {
		t.Errorf("terminated (-want +got):\n%s", d)
	}
	if len(f.net.Active()) != 0 {
		t.Errorf("network still set up after the pod ended: %v", f.net.Active())
	}
}

func TestPodFailsWithLogsAsMessage(t *testing.T) {
	f := newFakeNode(t, t.TempDir())
	pod := testPod("fail", func(p *corev1.Pod) {
		p.Spec.Containers[0].TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	})
	if err := f.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	proc := f.started()
	logPath := filepath.Join(f.cfg.StateDir, "pods", string(pod.UID), "logs", "compute.log")
	if err := os.WriteFile(logPath, []byte("starting\nlibvirtd died\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	proc.Exit(4)
	got := f.wait(pod, "Failed", phase(corev1.PodFailed))
	term := got.Status.ContainerStatuses[0].State.Terminated
	if term.ExitCode != 4 || term.Reason != "Error" || term.Message != "starting\nlibvirtd died" {
		t.Errorf("terminated = %+v, want exit 4, reason Error, the log's end as message", term)
	}
}

func TestMissingImageIsErrImagePull(t *testing.T) {
	f := newFakeNode(t, t.TempDir())
	pod := testPod("noimage", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "disk", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "example.com/missing:v1"}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "disk", MountPath: "/disk"}}
	})
	if err := f.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	got := f.wait(pod, "ErrImagePull", func(p *corev1.Pod) bool {
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "ErrImagePull"
	})
	if msg := got.Status.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(msg, `"example.com/missing:v1"`) {
		t.Errorf("waiting message %q does not name the image", msg)
	}
	if got.Status.Phase != corev1.PodPending {
		t.Errorf("phase = %s, want Pending", got.Status.Phase)
	}
}

func TestMissingCommandIsStartError(t *testing.T) {
	f := newFakeNode(t, t.TempDir())
	pod := testPod("nocmd", func(p *corev1.Pod) { p.Spec.Containers[0].Command = []string{"no-such-binary-anywhere"} })
	if err := f.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	got := f.wait(pod, "Failed", phase(corev1.PodFailed))
	term := got.Status.ContainerStatuses[0].State.Terminated
	if term.ExitCode != 128 || term.Reason != node.ReasonStartError || !strings.Contains(term.Message, "no-such-binary-anywhere") {
		t.Errorf("terminated = %+v, want exit 128, StartError naming the command", term)
	}
}

func TestReadinessFollowsProbe(t *testing.T) {
	f := newFakeNode(t, t.TempDir())
	pod := testPod("probe", func(p *corev1.Pod) {
		p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 1,
			ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/run/ready"}}}}
	})
	if err := f.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	proc := f.started()
	got := f.wait(pod, "Running", phase(corev1.PodRunning))
	if got.Status.ContainerStatuses[0].Ready {
		t.Fatal("ready before the probe passed")
	}
	if err := os.MkdirAll(filepath.Join(proc.Root(), "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proc.Root(), "run", "ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f.wait(pod, "Ready", func(p *corev1.Pod) bool { return p.Status.ContainerStatuses[0].Ready })
	if err := os.Remove(filepath.Join(proc.Root(), "run", "ready")); err != nil {
		t.Fatal(err)
	}
	f.wait(pod, "not Ready", func(p *corev1.Pod) bool { return !p.Status.ContainerStatuses[0].Ready })
}

func TestRestartOnFailure(t *testing.T) {
	f := newFakeNode(t, t.TempDir())
	pod := testPod("restart", func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure })
	if err := f.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	f.started().Exit(1)
	second := f.started()
	got := f.wait(pod, "restarted", func(p *corev1.Pod) bool { return p.Status.ContainerStatuses[0].State.Running != nil })
	cs := got.Status.ContainerStatuses[0]
	if cs.RestartCount != 1 || cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 {
		t.Errorf("after a restart: restartCount %d, last state %+v", cs.RestartCount, cs.LastTerminationState)
	}
	second.Exit(0)
	f.wait(pod, "Succeeded", phase(corev1.PodSucceeded))
}

func TestDeleteStopsAndForgets(t *testing.T) {
	for _, tc := range []struct {
		name       string
		ignoreTerm bool
		grace      int64
		wantCode   int32
	}{
		{"exits on SIGTERM", false, 30, 143},
		{"killed after the grace period", true, 0, 137},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeNode(t, t.TempDir())
			f.runner.IgnoreTerm = tc.ignoreTerm
			pod := testPod("del")
			if _, err := f.client.CoreV1().Pods("ns").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := f.p.CreatePod(context.Background(), pod); err != nil {
				t.Fatal(err)
			}
			proc := f.started()
			f.wait(pod, "Running", phase(corev1.PodRunning))
			var final *corev1.Pod
			f.p.NotifyPods(context.Background(), func(p *corev1.Pod) {
				if p.Status.Phase == corev1.PodFailed {
					final = p
				}
			})
			deleting := pod.DeepCopy()
			deleting.DeletionGracePeriodSeconds = &tc.grace
			if err := f.p.DeletePod(context.Background(), deleting); err != nil {
				t.Fatal(err)
			}
			testenv.EventuallyEvery(testenv.Within(t, 10*time.Second), t, 5*time.Millisecond, "the pod forgotten after its deletion", func() (bool, string) {
				_, err := f.p.GetPod(context.Background(), "ns", "del")
				return err != nil, "still known"
			})
			if got := proc.Signals(); len(got) == 0 || got[0] != syscall.SIGTERM {
				t.Errorf("signals = %v, want SIGTERM first", got)
			}
			if final == nil || final.Status.ContainerStatuses[0].State.Terminated.ExitCode != tc.wantCode {
				t.Errorf("final status = %+v, want Failed with exit code %d", final, tc.wantCode)
			}
			if _, err := os.Stat(filepath.Join(f.cfg.StateDir, "pods", string(pod.UID))); !os.IsNotExist(err) {
				t.Errorf("the pod's folder is left: %v", err)
			}
			if len(f.net.Active()) != 0 {
				t.Errorf("network left: %v", f.net.Active())
			}
			var deleted bool
			for _, a := range f.client.Actions() {
				if d, ok := a.(k8stesting.DeleteAction); ok && d.GetName() == "del" {
					deleted = true
				}
			}
			if !deleted {
				t.Error("the pod was not deleted from the API")
			}
		})
	}
}

func TestVolumes(t *testing.T) {
	hostDir := filepath.Join(t.TempDir(), "made", "here")
	dirOrCreate := corev1.HostPathDirectoryOrCreate
	optional := true
	f := newFakeNode(t, t.TempDir(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"a.txt": "alpha", "b.txt": "beta"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Data: map[string][]byte{"key": []byte("secret!")}})
	pod := testPod("vols", func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "x"}
		p.Spec.Volumes = []corev1.Volume{
			{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir, Type: &dirOrCreate}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Items: []corev1.KeyToPath{{Key: "a.txt", Path: "sub/a"}}}}},
			{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
			{Name: "optional", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "absent", Optional: &optional}}},
			{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
				{Path: "app", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}}}}},
			{Name: "disk", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "example.com/disk:v1"}}},
		}
		for _, v := range p.Spec.Volumes {
			p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: "/mnt/" + v.Name})
		}
	})
	if err := f.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	proc := f.started()
	read := func(target, file string) string {
		t.Helper()
		m, err := proc.Mount(target)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(m.Source, file))
		if err != nil {
			t.Error(err)
		}
		return string(b)
	}
	if st, err := os.Stat(hostDir); err != nil || !st.IsDir() {
		t.Errorf("hostPath DirectoryOrCreate not created: %v", err)
	}
	for _, c := range []struct{ target, file, want string }{
		{"/mnt/cm", "sub/a", "alpha"},
		{"/mnt/secret", "key", "secret!"},
		{"/mnt/info", "name", "vols"},
		{"/mnt/info", "app", "x"},
	} {
		if got := read(c.target, c.file); got != c.want {
			t.Errorf("%s/%s = %q, want %q", c.target, c.file, got, c.want)
		}
	}
	var ro []string
	for _, m := range proc.Spec.Mounts {
		if m.ReadOnly {
			ro = append(ro, m.Target)
		}
	}
	if want := []string{"/mnt/cm", "/mnt/secret", "/mnt/optional", "/mnt/info", "/mnt/disk"}; !cmp.Equal(ro, want) {
		t.Errorf("read-only mounts = %v, want %v", ro, want)
	}
	if m, _ := proc.Mount("/mnt/host"); m.Source != hostDir {
		t.Errorf("hostPath mount source = %q, want %q", m.Source, hostDir)
	}
}

// A restarted node reports the pods whose processes ended with it as
// Failed, kills what is left and tears their networks down.
func TestRestartReportsLostPods(t *testing.T) {
	state := t.TempDir()
	f := newFakeNode(t, state)
	pod := testPod("lost")
	if err := f.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	proc := f.started()
	f.wait(pod, "Running", phase(corev1.PodRunning))

	// A second provider on the same folder, as after a crash of the first.
	again := newFakeNode(t, state)
	got, err := again.p.GetPod(context.Background(), "ns", "lost")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.PodFailed || got.Status.Reason != node.ReasonNodeRestarted {
		t.Errorf("recovered pod: phase %s reason %q, want Failed %s", got.Status.Phase, got.Status.Reason, node.ReasonNodeRestarted)
	}
	term := got.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.Reason != node.ReasonContainerStatusUnknown || term.ExitCode != 137 {
		t.Errorf("recovered container: %+v", got.Status.ContainerStatuses[0].State)
	}
	if k := again.runner.Killed(); len(k) != 1 || k[0] != proc.Ref() {
		t.Errorf("killed = %v, want the lost process %v", k, proc.Ref())
	}
	notified := make(chan *corev1.Pod, 1)
	again.p.NotifyPods(context.Background(), func(p *corev1.Pod) { notified <- p })
	select {
	case p := <-notified:
		if p.Status.Reason != node.ReasonNodeRestarted {
			t.Errorf("notified %+v", p.Status)
		}
	case <-time.After(5 * time.Second):
		t.Error("the recovered pod was not reported")
	}
	// Deleted from the API meanwhile: forgotten with its folder.
	if err := again.p.DeletePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(state, "pods", string(pod.UID))); !os.IsNotExist(err) {
		t.Errorf("the lost pod's folder is left: %v", err)
	}
}

// A pod that replaces one of the same name (deleted from the API, still
// stopping on the node) starts once the old one is gone.
func TestReplacedPod(t *testing.T) {
	f := newFakeNode(t, t.TempDir())
	old := testPod("same")
	if err := f.p.CreatePod(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	first := f.started()
	f.wait(old, "Running", phase(corev1.PodRunning))
	replacement := testPod("same", func(p *corev1.Pod) { p.UID = "uid-same-2" })
	if err := f.p.UpdatePod(context.Background(), replacement); err != nil {
		t.Fatal(err)
	}
	second := f.started()
	select {
	case <-first.Exited():
	default:
		t.Error("the replacement started before the old pod's process ended")
	}
	if got := first.Signals(); len(got) == 0 || got[0] != syscall.SIGTERM {
		t.Errorf("old pod's signals = %v, want SIGTERM", got)
	}
	got := f.wait(replacement, "Running", phase(corev1.PodRunning))
	if got.UID != replacement.UID {
		t.Errorf("GetPod gives uid %s, want the replacement's", got.UID)
	}
	second.Exit(0)
	f.wait(replacement, "Succeeded", phase(corev1.PodSucceeded))
}
