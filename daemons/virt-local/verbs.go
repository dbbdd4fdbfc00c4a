package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/virtkit/virtkit/local/cluster"
)

// running reports the pid of the serve process of o's data directory.
func running(o options) (int, bool) {
	b, err := os.ReadFile(o.pidFile())
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || !strings.Contains(string(cmd), "virt-local") {
		return 0, false // stale: the process is gone, or the pid was reused
	}
	return pid, true
}

// up starts serve in the background and waits until it is ready, showing
// the progress lines of its log; the components' lines stay in the log.
func up(o options) error {
	if pid, ok := running(o); ok {
		if _, err := os.Stat(o.readyFile()); err == nil {
			fmt.Printf("virt-local already runs (pid %d), log %s\nexport KUBECONFIG=%s\nregistry %s\n", pid, o.logFile(), o.kubeconfig(), o.registry())
			return nil
		}
		return fmt.Errorf("virt-local (pid %d) is starting or stopping; see %s", pid, o.logFile())
	}
	if err := os.MkdirAll(o.dataDir, 0o700); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(o.logFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	start, _ := logf.Seek(0, io.SeekEnd)
	_ = os.Remove(o.readyFile())
	cmd := exec.Command(exe, append([]string{"serve"}, o.args()...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlives this command and its terminal
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s serve: %w", exe, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	fmt.Printf("virt-local: starting in the background (pid %d), log %s\n", cmd.Process.Pid, o.logFile())

	follow := newFollower(o.logFile(), start)
	deadline := time.After(o.timeout)
	for {
		follow.print(os.Stdout)
		if _, err := os.Stat(o.readyFile()); err == nil {
			fmt.Printf("virt-local: ready\nexport KUBECONFIG=%s\nregistry %s (push images as localhost:%s/NAME:TAG)\n",
				o.kubeconfig(), o.registry(), port(o.registry()))
			if m := o.metrics(); m != "" {
				fmt.Printf("metrics http://%s/metrics\n", m)
			}
			return nil
		}
		select {
		case err := <-exited:
			follow.print(os.Stdout)
			printTail(o.logFile(), start)
			return fmt.Errorf("serve exited before it was ready (%v); the end of its log above says why (all of it in %s)", err, o.logFile())
		case <-deadline:
			printTail(o.logFile(), start)
			return fmt.Errorf("not ready after %s; it keeps trying in the background (`virt-local down` stops it), log %s", o.timeout, o.logFile())
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// down stops the serve process and waits for it to end.
func down(o options) error {
	pid, ok := running(o)
	if !ok {
		fmt.Println("virt-local: not running")
		// A real node of a virt-local that was killed left host changes.
		return cluster.CleanupKubeletNodes(context.Background(), o.dataDir)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop pid %d: %w", pid, err)
	}
	fmt.Printf("virt-local: stopping (pid %d): guests shut down gracefully\n", pid)
	deadline := time.Now().Add(o.timeout)
	for time.Now().Before(deadline) {
		if _, ok := running(o); !ok {
			fmt.Println("virt-local: stopped")
			return cluster.CleanupKubeletNodes(context.Background(), o.dataDir)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("pid %d still runs after %s; see %s", pid, o.timeout, o.logFile())
}

// status says whether virt-local runs and lists its nodes.
func status(o options) error {
	pid, ok := running(o)
	if !ok {
		fmt.Println("virt-local: not running")
		return nil
	}
	if _, err := os.Stat(o.readyFile()); err != nil {
		fmt.Printf("virt-local: starting or stopping (pid %d), log %s\n", pid, o.logFile())
		return nil
	}
	fmt.Printf("virt-local: running (pid %d)\nexport KUBECONFIG=%s\n", pid, o.kubeconfig())
	fmt.Printf("registry %s %s\n", o.registry(), registryState(o.registry()))
	if m := o.metrics(); m != "" {
		fmt.Printf("metrics http://%s/metrics\n", m)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig())
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	for _, n := range nodes.Items {
		ready := "NotReady"
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = "Ready"
			}
		}
		fmt.Printf("node %s %s\n", n.Name, ready)
	}
	return nil
}

func (o options) kubeconfig() string { return o.clusterConfig(nopLogger()).Kubeconfig() }

// printTail shows the end of this start's log, where a failure is explained.
func printTail(path string, start int64) {
	fmt.Printf("the last lines of %s:\n", path)
	for _, l := range tail(path, start, 20) {
		fmt.Println("  " + l)
	}
}
