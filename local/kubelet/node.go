package kubelet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/virtkit/virtkit/internal/spawn"
	"github.com/virtkit/virtkit/local/controlplane"
	"github.com/virtkit/virtkit/local/node"
)

// Node is a running real node.
type Node struct {
	cfg        Config
	p          paths
	sp         *spawn.Spawner
	cs         kubernetes.Interface
	state      HostState
	containerd *daemon
	kubelet    *daemon

	lock *os.File // hostLock, held while the node runs

	stopOnce sync.Once
	stopErr  error
}

// apiserverKubeletBinding grants the apiserver's kubelet client what the
// kubelets' webhook authorization asks for (logs, exec, port forwarding,
// metrics), as kubeadm does.
const apiserverKubeletBinding = "virt-local:kube-apiserver-kubelet-client"

// Start starts a node as the package documentation says and returns once
// its Node is Ready. On failure nothing of it is left.
func Start(ctx context.Context, cfg Config) (_ *Node, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("kubelet: a real node needs root")
	}
	if err := checkBinaries(cfg); err != nil {
		return nil, err
	}
	p := paths{cfg.Dir}
	lock, err := lockHost(ctx, func() {
		cfg.Logger.Info("another real node runs on this host; waiting for it to stop", "lock", hostLock)
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			lock.Close()
		}
	}()
	if _, err := os.Stat(p.hostState()); err == nil {
		cfg.Logger.Info("a node of this folder was not stopped; cleaning up first", "dir", cfg.Dir)
		if err := cleanup(ctx, cfg.Dir); err != nil {
			return nil, fmt.Errorf("kubelet: cleaning up after an earlier node: %w", err)
		}
	}
	for _, d := range []string{p.containerdRoot(), p.containerdState(), p.certsDir(), p.cniConfDir(), p.cniLeases(), p.kubeletRoot(), p.podLogs(), p.logs()} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return nil, fmt.Errorf("kubelet: %w", err)
		}
	}
	state, err := RecordHostState(ctx)
	if err != nil {
		return nil, fmt.Errorf("kubelet: recording the host state: %w", err)
	}
	if err := (record{Node: cfg.NodeName, Bridge: cfg.Bridge, State: state}).save(p.hostState()); err != nil {
		return nil, fmt.Errorf("kubelet: %w", err)
	}
	rc, err := cfg.ControlPlane.RESTConfig()
	if err != nil {
		return nil, fmt.Errorf("kubelet: %w", err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubelet: %w", err)
	}
	n := &Node{cfg: cfg, p: p, sp: spawn.New(), cs: cs, state: state, lock: lock}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.Stop(context.WithoutCancel(ctx)))
		}
	}()
	if err := n.writeFiles(ctx); err != nil {
		return nil, fmt.Errorf("kubelet: %w", err)
	}
	if err := createCgroupRoot(cgroupRoot(cfg.NodeName)); err != nil {
		return nil, fmt.Errorf("kubelet: %w", err)
	}
	env := []string{"PATH=" + cfg.ContainerdBinDir + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	n.containerd, err = startDaemon(n.sp, "containerd", filepath.Join(p.logs(), "containerd.log"), env,
		filepath.Join(cfg.ContainerdBinDir, "containerd"), "--config", p.containerdConfig())
	if err != nil {
		return nil, fmt.Errorf("kubelet: %w", err)
	}
	if err := n.waitSocket(ctx); err != nil {
		return nil, err
	}
	n.kubelet, err = startDaemon(n.sp, "kubelet", filepath.Join(p.logs(), "kubelet.log"), env, cfg.KubeletBinary, kubeletArgs(cfg)...)
	if err != nil {
		return nil, fmt.Errorf("kubelet: %w", err)
	}
	if err := n.waitReady(ctx); err != nil {
		return nil, err
	}
	cfg.Logger.Info("real node ready", "node", cfg.NodeName, "ip", cfg.NodeIP)
	return n, nil
}

// Name is the Node's name.
func (n *Node) Name() string { return n.cfg.NodeName }

// HostState is the host state recorded before the node started.
func (n *Node) HostState() HostState { return n.state }

// IP is the node's InternalIP, where its kubelet and its host-network
// pods serve.
func (n *Node) IP() string { return n.cfg.NodeIP }

// PodsDir is the kubelet's pods folder (its --root-dir's pods), where each
// pod's volumes are.
func (n *Node) PodsDir() string { return n.cfg.PodsDir() }

// ContainerdSocket is the node's containerd socket.
func (n *Node) ContainerdSocket() string { return n.p.containerdSocket() }

func checkBinaries(c Config) error {
	var errs []error
	for _, f := range []string{c.KubeletBinary, filepath.Join(c.ContainerdBinDir, "containerd"),
		filepath.Join(c.ContainerdBinDir, "containerd-shim-runc-v2"), filepath.Join(c.ContainerdBinDir, "ctr"), c.Runc,
		filepath.Join(c.CNIBinDir, "bridge"), filepath.Join(c.CNIBinDir, "host-local"), filepath.Join(c.CNIBinDir, "loopback")} {
		if st, err := os.Stat(f); err != nil || st.Mode()&0o111 == 0 {
			errs = append(errs, fmt.Errorf("kubelet: %s: not an executable", f))
		}
	}
	return errors.Join(errs...)
}

// writeFiles writes the kubelet's credentials and every configuration file.
func (n *Node) writeFiles(ctx context.Context) error {
	c, p := n.cfg, n.p
	pki := c.ControlPlane.PKI()
	cert := "kubelet-" + c.NodeName
	if err := pki.EnsureClientCert(cert, nodeUser(c), "system:nodes"); err != nil {
		return err
	}
	if err := c.ControlPlane.WriteKubeconfig(p.kubeconfig(), cert); err != nil {
		return err
	}
	if err := n.bindAPIServer(ctx); err != nil {
		return err
	}
	containerd, err := renderContainerd(c)
	if err != nil {
		return err
	}
	kubelet, err := renderKubeletConfig(c)
	if err != nil {
		return err
	}
	cni := &node.CNI{BinDir: c.CNIBinDir, Network: "virt-local-" + c.NodeName, Bridge: c.Bridge, Subnet: c.PodSubnet, DataDir: p.cniLeases()}
	conflist, err := cni.ConfList()
	if err != nil {
		return err
	}
	files := map[string][]byte{
		p.containerdConfig(): containerd,
		p.kubeletConfig():    kubelet,
		filepath.Join(p.cniConfDir(), "10-virt-local.conflist"): conflist,
	}
	for _, r := range c.InsecureRegistries {
		if err := os.MkdirAll(filepath.Join(p.certsDir(), r), 0o750); err != nil {
			return err
		}
		files[filepath.Join(p.certsDir(), r, "hosts.toml")] = renderHostsTOML(r)
	}
	for f, b := range files {
		if err := os.WriteFile(f, b, 0o640); err != nil {
			return err
		}
	}
	return nil
}

// bindAPIServer binds the apiserver's kubelet client to
// system:kubelet-api-admin (idempotent).
func (n *Node) bindAPIServer(ctx context.Context) error {
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: apiserverKubeletBinding},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: controlplane.KubeletClientUser}},
	}
	_, err := n.cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func (n *Node) waitSocket(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.Dial("unix", n.p.containerdSocket()); err == nil {
			c.Close()
			return nil
		}
		if done, err := n.containerd.exited(); done {
			return fmt.Errorf("kubelet: containerd exited (%v): %s", err, tail(filepath.Join(n.p.logs(), "containerd.log")))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kubelet: containerd did not serve %s within 30 s: %s", n.p.containerdSocket(), tail(filepath.Join(n.p.logs(), "containerd.log")))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (n *Node) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.ReadyTimeout)
	defer cancel()
	for {
		nd, err := n.cs.CoreV1().Nodes().Get(ctx, n.cfg.NodeName, metav1.GetOptions{})
		if err == nil && nodeReady(nd) {
			return nil
		}
		if done, err := n.kubelet.exited(); done {
			return fmt.Errorf("kubelet: the kubelet exited (%v): %s", err, tail(filepath.Join(n.p.logs(), "kubelet.log")))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubelet: node %s not Ready within %s: %s", n.cfg.NodeName, n.cfg.ReadyTimeout, tail(filepath.Join(n.p.logs(), "kubelet.log")))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Stop ends the node: its pods are deleted and torn down by the kubelet
// (up to a minute and a half), the daemons stopped, and what is left
// removed; the host state is restored and the Node object deleted. It
// goes on after a failure and returns every error.
func (n *Node) Stop(ctx context.Context) error {
	n.stopOnce.Do(func() { n.stopErr = n.stop(ctx) })
	return n.stopErr
}

func (n *Node) stop(ctx context.Context) error {
	var errs []error
	if n.kubelet != nil {
		if done, _ := n.kubelet.exited(); !done {
			errs = append(errs, n.drain(ctx))
		}
	}
	errs = append(errs, n.kubelet.stop(30*time.Second))
	if n.containerd != nil {
		if done, _ := n.containerd.exited(); !done {
			errs = append(errs, removeContainers(ctx, n.cfg, n.p))
		}
	}
	errs = append(errs, n.containerd.stop(15*time.Second))
	n.sp.Close()
	errs = append(errs, teardown(ctx, n.cfg.Dir, record{Node: n.cfg.NodeName, Bridge: n.cfg.Bridge, State: n.state}))
	// Checked while the lock is held: no other node can have changed it.
	if changes, err := n.state.Changes(ctx); err != nil || len(changes) > 0 {
		errs = append(errs, fmt.Errorf("the host differs from before the node started: %v %v", changes, err))
	}
	if err := n.cs.CoreV1().Nodes().Delete(ctx, n.cfg.NodeName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, err)
	}
	defer n.lock.Close() // after the record is gone: a new node finds nothing to clean up
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kubelet: stopping node %s: %w", n.cfg.NodeName, err)
	}
	return os.Remove(n.p.hostState())
}

// drain deletes the node's pods and waits for them to be gone.
func (n *Node) drain(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	sel := fields.OneTermEqualSelector("spec.nodeName", n.cfg.NodeName).String()
	for {
		pods, err := n.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return fmt.Errorf("listing the node's pods: %w", err)
		}
		if len(pods.Items) == 0 {
			return nil
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				if err := n.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("deleting pod %s/%s: %w", p.Namespace, p.Name, err)
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the node's pods were not gone within 90 s (%d left)", len(pods.Items))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Cleanup removes what the node of folder dir left when it was not stopped
// (its daemons and shims killed, mounts, cgroups, bridge) and restores the
// host state it recorded there. It does nothing when the folder has no
// record. The Node object, if the control plane still has it, stays. It
// waits while another real node runs on the host.
func Cleanup(ctx context.Context, dir string) error {
	if _, err := os.Stat(paths{dir}.hostState()); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	lock, err := lockHost(ctx, func() {})
	if err != nil {
		return err
	}
	defer lock.Close()
	return cleanup(ctx, dir)
}

func cleanup(ctx context.Context, dir string) error {
	p := paths{dir}
	r, err := loadRecord(p.hostState())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("kubelet: %w", err)
	}
	if err := teardown(ctx, dir, r); err != nil {
		return fmt.Errorf("kubelet: cleaning up node %s: %w", r.Node, err)
	}
	return os.Remove(p.hostState())
}

// teardown removes what may be left once the daemons are gone, or kills
// them when they are not.
func teardown(ctx context.Context, dir string, r record) error {
	var errs []error
	killReferencing(dir) // the daemons after a crash; shims, which outlive containerd
	errs = append(errs, unmountBelow(dir))
	errs = append(errs, removeCgroupRoot(cgroupRoot(r.Node)))
	if l, err := netlink.LinkByName(r.Bridge); err == nil {
		if err := netlink.LinkDel(l); err != nil {
			errs = append(errs, fmt.Errorf("removing bridge %s: %w", r.Bridge, err))
		}
	}
	errs = append(errs, r.State.Restore(ctx))
	return errors.Join(errs...)
}

// removeContainers kills and removes every container containerd still
// holds in the CRI namespace (what a kubelet stopped mid-way left).
func removeContainers(ctx context.Context, c Config, p paths) error {
	ctr := func(args ...string) ([]byte, error) {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		all := append([]string{"--address", p.containerdSocket(), "--namespace", "k8s.io"}, args...)
		var stderr bytes.Buffer
		cmd := exec.CommandContext(cctx, filepath.Join(c.ContainerdBinDir, "ctr"), all...)
		cmd.Stderr = &stderr
		out, err := cmd.Output() // warnings go to stderr
		if err != nil {
			return out, fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
		}
		return out, nil
	}
	var errs []error
	out, err := ctr("containers", "list", "--quiet")
	if err != nil {
		return err
	}
	for _, id := range strings.Fields(string(out)) {
		_, _ = ctr("tasks", "kill", "--signal", "SIGKILL", id)
		_, _ = ctr("tasks", "delete", "--force", id)
		if _, err := ctr("containers", "delete", id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// killReferencing kills every process whose command line names dir (the
// node's kubelet, containerd and shims, whatever became of their parent).
func killReferencing(dir string) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if bytes.Contains(cmdline, []byte(dir+"/")) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// tail is the end of a log file, for errors.
func tail(file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return file + ": ..." + string(b)
}
