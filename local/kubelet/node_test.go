package kubelet_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/vishvananda/netlink"
	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/virtkit/virtkit/deploy/images"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/local/controlplane"
	"github.com/virtkit/virtkit/local/kubelet"
	"github.com/virtkit/virtkit/local/registry"
	"github.com/virtkit/virtkit/virt/devices"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// pushBuilt pushes image ref (NAME:TAG) of `make images`' layout to prefix.
func pushBuilt(t *testing.T, ctx context.Context, prefix, ref string) string {
	t.Helper()
	img, err := images.FromLayout(testenv.Output(t, "images"), ref)
	assert.NilError(t, err, "run 'make images' first")
	target := prefix + "/" + ref
	_, _, err = registry.Push(ctx, target, img)
	assert.NilError(t, err)
	return target
}

// A real kubelet with containerd joins the control plane, runs a pod from
// the local registry as a container, serves its logs to the apiserver but
// nothing to anonymous callers, and leaves the host as it found it.
func TestRealNode(t *testing.T) {
	testenv.Integration(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	base := testenv.FreePorts(t, 4)
	dir := testenv.Dir(t)
	cp, err := controlplane.Start(ctx, controlplane.Config{DataDir: filepath.Join(dir, "cp"), BinDir: testenv.Output(t, "bin"),
		APIServerPort: base, EtcdPort: base + 1, Logger: testr.New(t)})
	assert.NilError(t, err)
	defer cp.Stop()
	reg, err := registry.Start(ctx, registry.Config{Dir: filepath.Join(dir, "registry"), Addr: "127.0.0.1:0"})
	assert.NilError(t, err)
	defer reg.Stop(ctx)
	pause := pushBuilt(t, ctx, reg.Addr()+"/virtkit", "pause:devel")

	port := testenv.FreePorts(t, 1)
	cfg := kubelet.Config{
		Dir: filepath.Join(dir, "node"), ControlPlane: cp.Config(), NodeName: testenv.NamePrefix() + "kubelet",
		KubeletBinary: testenv.Output(t, "bin", "kubelet"), ContainerdBinDir: testenv.Output(t, "containerd", "bin"),
		CNIBinDir: testenv.Output(t, "cni", "bin"), SandboxImage: pause, InsecureRegistries: []string{reg.Addr()},
		Bridge: "vkt-kl" + strconv.Itoa(os.Getpid()%10000), PodSubnet: "10.89.7.0/24", KubeletPort: port,
		Logger: testr.New(t),
	}
	n, err := kubelet.Start(ctx, cfg)
	assert.NilError(t, err)
	stopped := false
	defer func() {
		if !stopped {
			assert.NilError(t, n.Stop(context.Background()))
		}
	}()

	rc, err := cp.RESTConfig()
	assert.NilError(t, err)
	cs, err := kubernetes.NewForConfig(rc)
	assert.NilError(t, err)
	node, err := cs.CoreV1().Nodes().Get(ctx, n.Name(), metav1.GetOptions{})
	assert.NilError(t, err)
	var internal string
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			internal = a.Address
		}
	}
	assert.Assert(t, internal != "" && internal != "127.0.0.1", "%+v", node.Status.Addresses)

	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "real"}}, metav1.CreateOptions{})
	assert.NilError(t, err)
	testenv.Eventually(ctx, t, "the default service account", func() (bool, string) {
		_, err := cs.CoreV1().ServiceAccounts("real").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1", Namespace: "real"}, Spec: corev1.PodSpec{
		NodeName:   n.Name(),
		Containers: []corev1.Container{{Name: "c", Image: pause}},
	}}
	_, err = cs.CoreV1().Pods("real").Create(ctx, pod, metav1.CreateOptions{})
	assert.NilError(t, err)
	var got *corev1.Pod
	testenv.Eventually(ctx, t, "the pod Running in a container", func() (bool, string) {
		got, err = cs.CoreV1().Pods("real").Get(ctx, "p1", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Status.Phase == corev1.PodRunning && got.Status.PodIP != "", fmt.Sprintf("%s %+v", got.Status.Phase, got.Status.ContainerStatuses)
	})
	assert.Assert(t, strings.HasPrefix(got.Status.ContainerStatuses[0].ContainerID, "containerd://"), "%+v", got.Status.ContainerStatuses)
	assert.Assert(t, strings.HasPrefix(got.Status.PodIP, "10.89.7."), got.Status.PodIP)

	// Logs travel apiserver -> kubelet (client certificate, webhook authorization).
	var logs []byte
	testenv.Eventually(ctx, t, "the container's log through the apiserver", func() (bool, string) {
		logs, err = cs.CoreV1().Pods("real").GetLogs("p1", &corev1.PodLogOptions{Container: "c"}).DoRaw(ctx)
		return err == nil && strings.Contains(string(logs), "pause: waiting"), fmt.Sprintf("%v: %s", err, logs)
	})

	// Device plugins: the handler's tun plugin makes the resource
	// schedulable, and a pod that asks for it gets the device node.
	pctx, stopPlugin := context.WithCancel(ctx)
	pluginDone := make(chan error, 1)
	go func() {
		pluginDone <- devices.NewPlugin(devices.Device{Resource: devices.Tun, Path: "/dev/net/tun", Count: devices.DefaultCount}).Run(pctx)
	}()
	testenv.Eventually(ctx, t, "the node's devices.kubevirt.io/tun capacity", func() (bool, string) {
		nd, err := cs.CoreV1().Nodes().Get(ctx, n.Name(), metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		q := nd.Status.Allocatable[devices.Tun]
		return q.Value() == devices.DefaultCount, q.String()
	})
	tun := resource.MustParse("1")
	withTun := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "tun", Namespace: "real"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: pause, Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{devices.Tun: tun}}}},
	}}
	_, err = cs.CoreV1().Pods("real").Create(ctx, withTun, metav1.CreateOptions{})
	assert.NilError(t, err)
	testenv.Eventually(ctx, t, "the pod with a tun device scheduled to the node and Running", func() (bool, string) {
		got, err = cs.CoreV1().Pods("real").Get(ctx, "tun", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Status.Phase == corev1.PodRunning && got.Spec.NodeName == n.Name(), fmt.Sprintf("%s %+v", got.Status.Phase, got.Status.Conditions)
	})
	pid := taskPID(t, n.ContainerdSocket(), strings.TrimPrefix(got.Status.ContainerStatuses[0].ContainerID, "containerd://"))
	st, err := os.Stat(fmt.Sprintf("/proc/%d/root/dev/net/tun", pid))
	assert.NilError(t, err, "the container has the device")
	assert.Assert(t, st.Mode()&os.ModeCharDevice != 0, "%v", st.Mode())
	stopPlugin()
	assert.ErrorIs(t, <-pluginDone, context.Canceled)

	// Nobody else gets anything from the kubelet.
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := hc.Get("https://" + internal + ":" + strconv.Itoa(port) + "/pods")
	assert.NilError(t, err)
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	resp.Body.Close()
	assert.Equal(t, resp.StatusCode, http.StatusUnauthorized, "anonymous request: %s", body)

	// Stop fails unless the host is as it recorded it before starting
	// (sysctls, iptables chains, fixed paths, network namespaces).
	assert.NilError(t, n.Stop(ctx))
	stopped = true
	_, err = cs.CoreV1().Nodes().Get(ctx, n.Name(), metav1.GetOptions{})
	assert.Assert(t, err != nil, "the Node object is deleted")
	_, err = netlink.LinkByName(cfg.Bridge)
	assert.Assert(t, err != nil, "bridge %s removed", cfg.Bridge)
	for _, ctrl := range []string{"cpu", "memory", "pids"} {
		_, err := os.Stat(filepath.Join("/sys/fs/cgroup", ctrl, "virtkit-"+cfg.NodeName))
		assert.Assert(t, os.IsNotExist(err), "cgroup %s of the node: %v", ctrl, err)
	}
}

// taskPID is the PID of container id's task, as containerd's ctr lists it.
func taskPID(t *testing.T, sock, id string) int {
	t.Helper()
	out, err := exec.Command(testenv.Output(t, "containerd", "bin", "ctr"), "--address", sock, "--namespace", "k8s.io", "tasks", "list").Output()
	assert.NilError(t, err)
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == id {
			pid, err := strconv.Atoi(f[1])
			assert.NilError(t, err)
			return pid
		}
	}
	t.Fatalf("no task %s in:\n%s", id, out)
	return 0
}
