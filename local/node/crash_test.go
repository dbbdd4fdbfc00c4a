package node_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/local/node"
)

// crashStateEnv tells the test binary to act as a node process that runs
// one pod and then waits to be killed (crashHelper).
const crashStateEnv = "VKT_CRASH_STATE"

func crashConfig(state, prefix, cniBin string) node.Config {
	return node.Config{Name: prefix + "crash", StateDir: state, CNIBinDir: cniBin,
		PodCIDR: "10.251.78.0/24", Bridge: prefix + "cb"}
}

func crashPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: "t", UID: "6c1c0f1e-6f0e-4b55-8d8f-0d1c2b3a4f5e"},
		Spec: corev1.PodSpec{NodeName: "crash", RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Command: []string{"/bin/sh", "-c", "exec sleep 1000"}}}}}
}

// crashHelper is the node process TestRestartAfterCrash kills: TestMain
// runs it instead of the tests when crashStateEnv is set. It runs one pod,
// says "running IP" on stdout, and waits to be killed.
func crashHelper(state string) error {
	parts := strings.SplitN(state, ":", 3)
	if len(parts) != 3 {
		return fmt.Errorf("%s=%q: want STATE:PREFIX:CNIBIN", crashStateEnv, state)
	}
	p, err := node.NewProvider(context.Background(), crashConfig(parts[0], parts[1], parts[2]), fake.NewClientset(),
		node.WithEnv(testenv.OwnerEnv+"="+os.Getenv(testenv.OwnerEnv)))
	if err != nil {
		return err
	}
	if err := p.CreatePod(context.Background(), crashPod()); err != nil {
		return err
	}
	for {
		got, _ := p.GetPod(context.Background(), "t", "victim")
		if got != nil && got.Status.Phase == corev1.PodRunning {
			os.Stdout.WriteString("running " + got.Status.PodIP + "\n")
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Hour) // until killed
	return nil
}

// A node process killed with its pods running: its pods die with it (their
// parent-death signal), and the next node on the same state folder reports
// them Failed (NodeRestarted) and removes their network namespace, veth and
// folders.
func TestRestartAfterCrash(t *testing.T) {
	testenv.Integration(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	state := filepath.Join(testenv.Dir(t), "node")
	cniBin := testenv.CNIPlugins(t)
	prefix := testenv.NamePrefix()
	owner := strconv.Itoa(os.Getpid())

	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), crashStateEnv+"="+state+":"+prefix+":"+cniBin, testenv.OwnerEnv+"="+owner)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	running := false
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "running ") {
			running = true
			break
		}
	}
	if !running {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("the node process did not report its pod running")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	pod := crashPod()
	dir := filepath.Join(state, "pods", string(pod.UID))
	if _, err := os.Stat(filepath.Join(dir, "netns")); err != nil {
		t.Fatalf("the crashed node left no network namespace to clean up (the test proves nothing): %v", err)
	}
	p, err := node.NewProvider(ctx, crashConfig(state, prefix, cniBin), fake.NewClientset(),
		node.WithEnv(testenv.OwnerEnv+"="+owner))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
		if _, err := netlink.LinkByName(prefix + "cb"); err == nil {
			t.Errorf("bridge %scb left", prefix)
		}
	})
	got, err := p.GetPod(ctx, "t", "victim")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.PodFailed || got.Status.Reason != node.ReasonNodeRestarted {
		t.Errorf("after the crash: phase %s reason %q, want Failed %s", got.Status.Phase, got.Status.Reason, node.ReasonNodeRestarted)
	}
	if term := got.Status.ContainerStatuses[0].State.Terminated; term == nil || term.Reason != node.ReasonContainerStatusUnknown {
		t.Errorf("after the crash: container %+v", got.Status.ContainerStatuses[0].State)
	}
	if _, err := os.Stat(filepath.Join(dir, "netns")); !os.IsNotExist(err) {
		t.Errorf("network namespace left: %v", err)
	}
	if n := bridgePorts(t, prefix+"cb"); n != 0 {
		t.Errorf("%d veth left on the bridge", n)
	}
	if err := p.DeletePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("pod folder left after the deletion: %v", err)
	}
}
