package node_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/local/controlplane"
	"github.com/virtkit/virtkit/local/node"
	"github.com/virtkit/virtkit/local/registry"
)

func TestMain(m *testing.M) {
	if state := os.Getenv(crashStateEnv); state != "" {
		if err := crashHelper(state); err != nil {
			fmt.Fprintln(os.Stderr, "crash helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	testenv.Main(m)
}

// cluster is a real control plane, a registry and a local node on them.
type cluster struct {
	t     *testing.T
	dir   string
	cs    *kubernetes.Clientset
	cfg   node.Config
	node  *node.Node
	owner string
}

// pushDisk pushes a containerDisk image whose /disk/disk.img holds content
// to the node's registry as REPOSITORY:TAG and returns its reference.
func (c *cluster) pushDisk(repoTag, content string) string {
	c.t.Helper()
	disk := filepath.Join(c.dir, "disk.img")
	if err := os.WriteFile(disk, []byte(content), 0o644); err != nil {
		c.t.Fatal(err)
	}
	ref := c.cfg.Registry + "/" + repoTag
	if _, _, err := registry.PushContainerDisk(context.Background(), ref, disk); err != nil {
		c.t.Fatal(err)
	}
	return ref
}

func startCluster(t *testing.T, ctx context.Context) *cluster {
	t.Helper()
	// Everything started from here carries the leftover check's marker.
	owner := testenv.OwnerEnv + "=" + strconv.Itoa(os.Getpid())
	t.Setenv(testenv.OwnerEnv, strconv.Itoa(os.Getpid()))
	dir := testenv.Dir(t)
	base := testenv.FreePorts(t, 5) // the apiserver, etcd's three, the registry
	cp, err := controlplane.Start(ctx, controlplane.Config{DataDir: filepath.Join(dir, "cp"), BinDir: testenv.Output(t, "bin"),
		APIServerPort: base, EtcdPort: base + 1, Logger: testr.New(t).WithName("controlplane")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	rc, err := cp.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// A "launcher" found in the binary folder before PATH.
	if err := os.WriteFile(filepath.Join(bin, "vkt-hello"), []byte("#!/bin/sh\necho hello from the binary folder\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Start(ctx, registry.Config{Dir: filepath.Join(dir, "registry"),
		Addr: fmt.Sprintf("127.0.0.1:%d", base+4), Logger: testr.New(t).WithName("registry")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := reg.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	c := &cluster{t: t, dir: dir, cs: kubernetes.NewForConfigOrDie(rc), owner: owner}
	c.cfg = node.Config{
		Registry:  reg.Addr(),
		Name:      testenv.NamePrefix() + "node",
		StateDir:  filepath.Join(dir, "node"),
		BinDirs:   []string{bin},
		CNIBinDir: testenv.CNIPlugins(t),
		PodCIDR:   "10.251.77.0/24",
		Bridge:    testenv.NamePrefix() + "br",
		Logger:    testr.NewWithOptions(t, testr.Options{Verbosity: 0}).WithName("node"),
	}
	c.start(ctx)
	return c
}

func (c *cluster) start(ctx context.Context) {
	c.t.Helper()
	n, err := node.Start(ctx, c.cfg, c.cs, node.WithEnv(c.owner), node.WithRestartBackoff(200*time.Millisecond, 2*time.Second))
	if err != nil {
		c.t.Fatal(err)
	}
	c.node = n
	c.t.Cleanup(func() {
		if c.node == n {
			c.stop()
		}
	})
}

func (c *cluster) stop() {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.node.Stop(ctx); err != nil {
		c.t.Error(err)
	}
	c.node = nil
}

// waitPod polls the pod in the API until cond holds. A terminal pod that
// does not satisfy cond fails the test at once, with its logs.
func (c *cluster) waitPod(ctx context.Context, name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	c.t.Helper()
	var last *corev1.Pod
	for {
		p, err := c.cs.CoreV1().Pods("t").Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			last = p
			if cond(p) {
				return p
			}
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				c.t.Fatalf("pod %s ended (%s) instead of reaching %s; status: %+v\nlogs:\n%s", name, p.Status.Phase, what, p.Status, c.logs(p))
			}
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("pod %s: timed out waiting for %s; last status: %+v", name, what, last.Status)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// logs returns what the pod's containers wrote.
func (c *cluster) logs(p *corev1.Pod) string {
	var b strings.Builder
	for _, ct := range p.Spec.Containers {
		rc, err := c.node.Provider().GetContainerLogs(context.Background(), p.Namespace, p.Name, ct.Name, api.ContainerLogOpts{})
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", ct.Name, err)
			continue
		}
		out, _ := io.ReadAll(rc)
		rc.Close()
		fmt.Fprintf(&b, "%s:\n%s\n", ct.Name, out)
	}
	return b.String()
}

// waitGone waits until the pod is no longer in the API.
func (c *cluster) waitGone(ctx context.Context, name string) {
	c.t.Helper()
	for {
		_, err := c.cs.CoreV1().Pods("t").Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("pod %s still in the API", name)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func shPod(name, script string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "t"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			NodeSelector: map[string]string{"kubevirt.io/schedulable": "true"},
			Containers:   []corev1.Container{{Name: "main", Image: "example.com/busybox:1", Command: []string{"/bin/sh", "-c", script}}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func mount(p *corev1.Pod, vol corev1.Volume, path string) {
	p.Spec.Volumes = append(p.Spec.Volumes, vol)
	p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: vol.Name, MountPath: path})
}

func phaseIs(want corev1.PodPhase) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool { return p.Status.Phase == want }
}

// TestLocalNode runs pods on a real control plane and a local node: the
// scheduler binds them, they run as host processes with their volumes, a
// pod IP reachable from the host, readiness from a probe, exit codes and
// termination messages; deleting one, and stopping the node, leave nothing
// behind.
func TestLocalNode(t *testing.T) {
	testenv.Integration(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := startCluster(t, ctx)
	cs := c.cs

	nodeObj, err := cs.CoreV1().Nodes().Get(ctx, c.cfg.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if nodeObj.Labels["kubevirt.io/schedulable"] != "true" || nodeObj.Status.Allocatable.Cpu().IsZero() {
		t.Errorf("node: labels %v, allocatable %v", nodeObj.Labels, nodeObj.Status.Allocatable)
	}

	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		// Pods need the namespace's default service account (and its token
		// volume, the root CA's configMap), which the controller-manager makes.
		_, err1 := cs.CoreV1().ServiceAccounts("t").Get(ctx, "default", metav1.GetOptions{})
		_, err2 := cs.CoreV1().ConfigMaps("t").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if err1 == nil && err2 == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no default service account: %v %v", err1, err2)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if _, err := cs.CoreV1().ConfigMaps("t").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "www"},
		Data: map[string]string{"index.html": "hello from a configMap\n"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets("t").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"},
		Data: map[string][]byte{"token": []byte("s3cret")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	diskImage := c.pushDisk("disk:v1", "a disk")
	hostDir := filepath.Join(c.dir, "host-data")
	dirOrCreate := corev1.HostPathDirectoryOrCreate

	// web serves a configMap over HTTP after checking its secret, writes
	// to a hostPath volume, and is ready once its emptyDir (mounted where the
	// host has no folder) holds the file "ready".
	web := shPod("web", `set -e
test "$(cat /etc/vkt-secret/token)" = s3cret
test -s /var/run/secrets/kubernetes.io/serviceaccount/token
echo "written by $(cat /etc/hostname 2>/dev/null || true)pod" > /host/from-pod
exec busybox httpd -f -p 8080 -h /www`, func(p *corev1.Pod) {
		mount(p, corev1.Volume{Name: "www", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "www"}}}}, "/www")
		mount(p, corev1.Volume{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}, "/etc/vkt-secret")
		mount(p, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, "/vkt-scratch")
		mount(p, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir, Type: &dirOrCreate}}}, "/host")
		p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 1,
			ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/vkt-scratch/ready"}}}}
		// Runs in the pod's namespaces (nsenter); failing it would restart
		// nothing (Never) but kill the server.
		p.Spec.Containers[0].LivenessProbe = &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 2,
			ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"grep", "-q", "configMap", "/www/index.html"}}}}
	})
	done := shPod("done", `echo "bye: $(vkt-hello)" > /dev/termination-log; exit 3`)
	ok := shPod("ok", "", func(p *corev1.Pod) { p.Spec.Containers[0].Command = []string{"vkt-hello"} })
	image := shPod("image", `test "$(cat /img/disk/disk.img)" = "a disk" && ! touch /img/disk/x`, func(p *corev1.Pod) {
		mount(p, corev1.Volume{Name: "disk", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: diskImage}}}, "/img")
	})
	missingImage := c.cfg.Registry + "/missing:v1"
	noImage := shPod("noimage", "true", func(p *corev1.Pod) {
		mount(p, corev1.Volume{Name: "disk", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: missingImage}}}, "/disk")
	})
	// user runs as its security context says, in the fsGroup, which owns
	// what it makes in an emptyDir; nonroot asks not to be root and names
	// no user, so it does not start.
	uid, fsGroup, yes := int64(4107), int64(4200), true
	user := shPod("user", `set -e
test "$(id -u):$(id -g)" = 4107:4107
id -G | grep -qw 4200
touch /vkt-scratch/f
test "$(stat -c %g /vkt-scratch/f)" = 4200
! touch /etc/vkt-not-root`, func(p *corev1.Pod) {
		mount(p, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, "/vkt-scratch")
		p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &fsGroup, RunAsNonRoot: &yes}
	})
	nonRoot := shPod("nonroot", "true", func(p *corev1.Pod) {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: &yes}
	})
	// shared sees what the node mounts below its HostToContainer emptyDir
	// after it started, and not below its other one.
	shared := shPod("shared", `for i in $(seq 300); do [ "$(cat /hp/x 2>/dev/null)" = bound ] && break; sleep 0.1; done
test "$(cat /hp/x)" = bound && test ! -s /priv/x`, func(p *corev1.Pod) {
		mount(p, corev1.Volume{Name: "hp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, "/hp")
		mount(p, corev1.Volume{Name: "priv", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, "/priv")
		toContainer := corev1.MountPropagationHostToContainer
		p.Spec.Containers[0].VolumeMounts[0].MountPropagation = &toContainer
	})
	for _, p := range []*corev1.Pod{web, done, ok, image, noImage, user, nonRoot, shared} {
		if _, err := cs.CoreV1().Pods("t").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	got := c.waitPod(ctx, "done", "Failed", phaseIs(corev1.PodFailed))
	if term := got.Status.ContainerStatuses[0].State.Terminated; term.ExitCode != 3 || term.Message != "bye: hello from the binary folder\n" {
		t.Errorf("done: terminated %+v, want exit code 3 and the termination message", term)
	}
	if got.Spec.NodeName != c.cfg.Name {
		t.Errorf("done: bound to %q, want %q", got.Spec.NodeName, c.cfg.Name)
	}
	c.waitPod(ctx, "ok", "Succeeded", phaseIs(corev1.PodSucceeded))
	c.waitPod(ctx, "user", "Succeeded", phaseIs(corev1.PodSucceeded))
	got = c.waitPod(ctx, "nonroot", "Failed", phaseIs(corev1.PodFailed))
	if term := got.Status.ContainerStatuses[0].State.Terminated; term == nil || !strings.Contains(term.Message, "runAsNonRoot") {
		t.Errorf("nonroot: %+v, want a container that did not start because of runAsNonRoot", got.Status.ContainerStatuses[0].State)
	}
	c.waitPod(ctx, "image", "Succeeded", phaseIs(corev1.PodSucceeded))
	got = c.waitPod(ctx, "shared", "Running", phaseIs(corev1.PodRunning))
	src := filepath.Join(c.dir, "bound")
	if err := os.WriteFile(src, []byte("bound"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, vol := range []string{"hp", "priv"} {
		target := filepath.Join(c.cfg.PodsDir(), string(got.UID), "volumes", "kubernetes.io~empty-dir", vol, "x")
		if err := os.WriteFile(target, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })
	}
	got = c.waitPod(ctx, "shared", "ended", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	if got.Status.Phase != corev1.PodSucceeded {
		t.Errorf("shared: %s %+v; want it to see the node's mount below its HostToContainer volume only", got.Status.Phase, got.Status.ContainerStatuses)
	}
	for _, vol := range []string{"hp", "priv"} {
		if err := unix.Unmount(filepath.Join(c.cfg.PodsDir(), string(got.UID), "volumes", "kubernetes.io~empty-dir", vol, "x"), unix.MNT_DETACH); err != nil {
			t.Error(err)
		}
	}
	got = c.waitPod(ctx, "noimage", "ErrImagePull", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
			p.Status.ContainerStatuses[0].State.Waiting.Reason == "ErrImagePull"
	})
	if msg := got.Status.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(msg, missingImage) {
		t.Errorf("noimage: waiting message %q does not name the image", msg)
	}

	launcherPod(ctx, t, c, diskImage)

	got = c.waitPod(ctx, "web", "Running", phaseIs(corev1.PodRunning))
	ip := got.Status.PodIP
	if _, subnet, _ := net.ParseCIDR(c.cfg.PodCIDR); !subnet.Contains(net.ParseIP(ip)) {
		t.Fatalf("web: pod IP %q is not in %s", ip, c.cfg.PodCIDR)
	}
	if got.Status.ContainerStatuses[0].Ready {
		t.Error("web: ready before its probe passed")
	}
	body := httpGet(ctx, t, "http://"+net.JoinHostPort(ip, "8080")+"/index.html")
	if body != "hello from a configMap\n" {
		t.Errorf("web: GET / = %q", body)
	}
	if b, err := os.ReadFile(filepath.Join(hostDir, "from-pod")); err != nil || !strings.Contains(string(b), "pod") {
		t.Errorf("web: hostPath file: %q, %v", b, err)
	}
	// An emptyDir lies where a kubelet keeps it.
	emptyDir := filepath.Join(c.cfg.StateDir, "pods", string(got.UID), "volumes", "kubernetes.io~empty-dir", "scratch")
	if err := os.WriteFile(filepath.Join(emptyDir, "ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.waitPod(ctx, "web", "Ready", func(p *corev1.Pod) bool { return podReady(p) })
	if err := os.Remove(filepath.Join(emptyDir, "ready")); err != nil {
		t.Fatal(err)
	}
	got = c.waitPod(ctx, "web", "not Ready", func(p *corev1.Pod) bool { return !podReady(p) })
	if got.Status.Phase != corev1.PodRunning {
		t.Errorf("web: %s after its liveness probe ran for seconds, want Running", got.Status.Phase)
	}
	for _, p := range []string{"/", "/etc", "/run", "/dev"} {
		if _, err := os.Stat(filepath.Join(p, "vkt-scratch")); err == nil {
			t.Errorf("the host got a folder %s/vkt-scratch", p)
		}
	}
	if _, err := os.Stat("/etc/vkt-secret"); err == nil {
		t.Error("the host got /etc/vkt-secret")
	}

	// Delete: SIGTERM ends httpd, and nothing of the pod is left.
	start := time.Now()
	if err := cs.CoreV1().Pods("t").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitGone(ctx, "web")
	t.Logf("web deleted in %s", time.Since(start).Round(time.Millisecond))
	if _, err := os.Stat(filepath.Join(c.cfg.StateDir, "pods", string(got.UID))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("web: its folder is left: %v", err)
	}
	if _, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "8080"), time.Second); err == nil {
		t.Error("web: still answers after its deletion")
	}
	for _, name := range []string{"noimage", "done", "ok", "image", "user", "nonroot", "shared"} {
		if err := cs.CoreV1().Pods("t").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		c.waitGone(ctx, name)
	}
	if n := bridgePorts(t, c.cfg.Bridge); n != 0 {
		t.Errorf("%d veth left on bridge %s", n, c.cfg.Bridge)
	}
	if ents, _ := os.ReadDir(filepath.Join(c.cfg.StateDir, "pods")); len(ents) != 0 {
		t.Errorf("pod folders left: %v", ents)
	}

	// Stopping the node stops its pods: they end Failed (Terminated), and a
	// restarted node reports them so and removes them once deleted.
	if _, err := cs.CoreV1().Pods("t").Create(ctx, shPod("long", "exec sleep 1000"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitPod(ctx, "long", "Running", phaseIs(corev1.PodRunning))
	c.stop()
	got = c.waitPod(ctx, "long", "Failed", phaseIs(corev1.PodFailed))
	if got.Status.Reason != "Terminated" {
		t.Errorf("long after the node stopped: reason %q, want Terminated", got.Status.Reason)
	}
	if _, err := netlink.LinkByName(c.cfg.Bridge); err == nil {
		t.Errorf("bridge %s left after the node stopped", c.cfg.Bridge)
	}
	c.start(ctx)
	if err := cs.CoreV1().Pods("t").Delete(ctx, "long", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitGone(ctx, "long")
	testenv.Eventually(testenv.Within(t, 30*time.Second), t, "no pod folders left after the restarted node saw the deletion", func() (bool, string) {
		ents, _ := os.ReadDir(filepath.Join(c.cfg.StateDir, "pods"))
		return len(ents) == 0, fmt.Sprintf("%v", ents)
	})
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// httpGet fetches url, retrying while the server starts.
func httpGet(ctx context.Context, t *testing.T, url string) string {
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	var last error
	for {
		resp, err := hc.Get(url)
		if err == nil {
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == http.StatusOK {
				return string(b)
			}
			last = fmt.Errorf("%s: %v", resp.Status, err)
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("GET %s: %v", url, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// bridgePorts counts the links attached to bridge.
func bridgePorts(t *testing.T, bridge string) int {
	t.Helper()
	br, err := netlink.LinkByName(bridge)
	if err != nil {
		return 0
	}
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range links {
		if l.Attrs().MasterIndex == br.Attrs().Index {
			n++
		}
	}
	return n
}
