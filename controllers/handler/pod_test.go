package handler_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/handler"
	vmictl "github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/internal/linuxproc"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/virt/launcher"
	"github.com/virtkit/virtkit/virt/libvirtd"
)

// A launcher pod, played on this host as a kubelet would run it: the
// virt-launcher binary in a network namespace of its own (a veth pair to
// the host, eth0 with the pod's address, as a CNI plugin makes it) and a
// mount namespace of its own whose file system differs from the node's: a
// tmpfs on Root holds the pod's volumes (the containerDisk image, bound
// read-only, as the image volume would be) and the launcher folder, bound
// from the pod's emptyDir in the node's PodsDir as a kubelet does. What the
// handler writes into the pod lands in that tmpfs, invisible from the node.
type testPod struct {
	UID      types.UID
	Root     string // the pod's folder (a tmpfs inside the pod, empty on the node)
	Host     launcher.Layout
	NSName   string
	NS       netns.NsHandle
	PodIP    netip.Prefix
	hostVeth string

	cmd    *exec.Cmd
	done   chan struct{}
	stderr *syncBuffer
}

// podScript mounts the pod's file system and runs the launcher.
const podScript = `set -e
pod="$1"; host="$2"; uid="$3"; disk="$4"; shift 4
mount -t tmpfs -o mode=0755,size=512m vkt-pod "$pod"
mkdir -p "$pod/run/$uid" "$pod/cd/root/disk"
mount --bind "$host" "$pod/run/$uid"
: > "$pod/cd/root/disk/guest.img"
mount --bind "$disk" "$pod/cd/root/disk/guest.img"
mount -o remount,bind,ro "$pod/cd/root/disk/guest.img"
exec "$@"
`

var (
	podSeq       atomic.Uint32
	launcherOnce = sync.OnceValues(func() (string, error) {
		root, err := testenv.RepoRoot()
		if err != nil {
			return "", err
		}
		bin := filepath.Join(root, "_output", "test", "handler-virt-launcher")
		cmd := exec.Command("go", "build", "-o", bin, "./daemons/virt-launcher")
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build ./daemons/virt-launcher: %v\n%s", err, b)
		}
		return bin, nil
	})
)

// startPod starts the launcher pod of the VMI uid on node n.
func startPod(t *testing.T, n *realNode, vmi *virtv1.VirtualMachineInstance) *testPod {
	t.Helper()
	bin, err := launcherOnce()
	if err != nil {
		t.Fatal(err)
	}
	uid, namespace, name := vmi.UID, vmi.Namespace, vmi.Name
	// The pod object, as the VMI controller renders it and the scheduler
	// binds it: the handler finds the pod's folder by its UID.
	obj, err := vmictl.RenderPod(vmi, vmictl.PodOptions{LauncherImage: "localhost/virt-launcher:1", Emulation: true})
	if err != nil {
		t.Fatal(err)
	}
	obj.Spec.NodeName = n.Name
	must(t, n.CP.Client.Create(context.Background(), obj))
	guest := testenv.Guest(t)
	seq := podSeq.Add(1)
	x := byte((os.Getpid()*7+int(seq))%230 + 20)
	p := &testPod{
		UID:      uid,
		Root:     n.PodRoot,
		Host:     launcher.Layout{Root: vmictl.PodFolder(n.PodsDir, obj)},
		NSName:   testenv.NamePrefix() + "hpod" + strconv.Itoa(int(seq)),
		PodIP:    netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 97, x, 2}), 24),
		hostVeth: "vk" + strconv.Itoa(os.Getpid()%100000) + "p" + strconv.Itoa(int(seq)),
		done:     make(chan struct{}),
		stderr:   &syncBuffer{},
	}
	hostIP := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 97, x, 1}), 24)
	if err := os.MkdirAll(p.Host.Root, 0o755); err != nil {
		t.Fatal(err)
	}

	// The pod's network: a named namespace (the pause container's, in a
	// real pod) with eth0 on a veth pair to the host.
	inNS(t, nil, func() {
		h, err := netns.NewNamed(p.NSName)
		if err != nil {
			t.Fatalf("create netns %s: %v", p.NSName, err)
		}
		p.NS = h
	})
	t.Cleanup(func() {
		if l, err := netlink.LinkByName(p.hostVeth); err == nil {
			_ = netlink.LinkDel(l)
		}
		p.NS.Close()
		if err := netns.DeleteNamed(p.NSName); err != nil {
			t.Errorf("delete netns %s: %v", p.NSName, err)
		}
	})
	la := netlink.NewLinkAttrs()
	la.Name = p.hostVeth
	must(t, netlink.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: "eth0", PeerNamespace: netlink.NsFd(int(p.NS))}))
	host, err := netlink.LinkByName(p.hostVeth)
	must(t, err)
	must(t, netlink.AddrAdd(host, &netlink.Addr{IPNet: prefixNet(hostIP)}))
	must(t, netlink.LinkSetUp(host))
	h, err := netlink.NewHandleAt(p.NS)
	must(t, err)
	defer h.Close()
	lo, err := h.LinkByName("lo")
	must(t, err)
	must(t, h.LinkSetUp(lo))
	eth0, err := h.LinkByName("eth0")
	must(t, err)
	must(t, h.AddrAdd(eth0, &netlink.Addr{IPNet: prefixNet(p.PodIP)}))
	must(t, h.LinkSetUp(eth0))
	must(t, h.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: hostIP.Addr().AsSlice()}))

	// The launcher, forked from a thread in the pod's network namespace,
	// into a mount namespace of its own.
	podDir := filepath.Join(p.Root, "run", string(uid))
	p.cmd = exec.Command("/bin/sh", "-c", podScript, "pod", p.Root, p.Host.Root, string(uid), guest.Disk,
		bin, "--dir", podDir, "--namespace", namespace, "--name", name, "--grace-period", "20s",
		"--libvirt-cache-dir", testenv.CapabilitiesCache(t))
	p.cmd.Env = append(os.Environ(), testenv.OwnerEnv+"="+strconv.Itoa(os.Getpid()))
	p.cmd.Stdout, p.cmd.Stderr = p.stderr, p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Setpgid: true}
	inNS(t, &p.NS, func() {
		if err := p.cmd.Start(); err != nil {
			t.Fatalf("start the launcher: %v", err)
		}
	})
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop ends the launcher (SIGTERM: it stops its guest and libvirtd) and
// fails the test if anything of the pod survives.
func (p *testPod) stop(t *testing.T) {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(90 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
			t.Errorf("the launcher did not stop on SIGTERM:\n%s", p.stderr.String())
		}
	}
	left, err := linuxproc.List(linuxproc.SeesMountFrom(p.Host.Root))
	if err != nil {
		t.Error(err)
	}
	for _, pr := range left {
		t.Errorf("left behind by the pod: %s", pr)
		_ = syscall.Kill(pr.PID, syscall.SIGKILL)
	}
}

// exited waits for the launcher to end and returns its result.
func (p *testPod) exited(t *testing.T) launcher.Result {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the launcher did not exit:\n%s", p.stderr.String())
	}
	r, ended, err := launcher.ReadResult(p.Host)
	if err != nil || !ended {
		t.Fatalf("launcher result: %v (ended %v)\n%s", err, ended, p.stderr.String())
	}
	return r
}

// qemuPID is the guest's QEMU process, from libvirt's pid file.
func (p *testPod) qemuPID(t *testing.T, domainName string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.Host.LibvirtDir(), "run", "qemu", domainName+".pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// links lists the pod namespace's links other than lo.
func (p *testPod) links(t *testing.T) []string {
	t.Helper()
	h, err := netlink.NewHandleAt(p.NS)
	must(t, err)
	defer h.Close()
	ls, err := h.LinkList()
	must(t, err)
	var out []string
	for _, l := range ls {
		if l.Attrs().Name != "lo" {
			out = append(out, l.Attrs().Name)
		}
	}
	return out
}

// nftTables lists the nftables tables in the pod's namespace.
func (p *testPod) nftTables(t *testing.T) []string {
	t.Helper()
	c, err := nftables.New(nftables.WithNetNSFd(int(p.NS)))
	must(t, err)
	tables, err := c.ListTables()
	must(t, err)
	var out []string
	for _, tb := range tables {
		out = append(out, tb.Name)
	}
	return out
}

// packetSockets counts the packet sockets open in the pod's namespace: the
// handler's DHCP servers (the pod runs no other).
func (p *testPod) packetSockets(t *testing.T) int {
	t.Helper()
	n := 0
	inNS(t, &p.NS, func() {
		f, err := os.Open("/proc/thread-self/net/packet")
		must(t, err)
		defer f.Close()
		s := bufio.NewScanner(f)
		for s.Scan() {
			n++
		}
		n-- // the header
	})
	return n
}

// inNS runs f on a locked thread switched into ns (a new namespace is made
// by f itself when ns is nil), and back.
func inNS(t *testing.T, ns *netns.NsHandle, f func()) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatalf("current netns: %v", err)
	}
	defer orig.Close()
	if ns != nil {
		if err := netns.Set(*ns); err != nil {
			t.Fatalf("enter netns: %v", err)
		}
	}
	defer func() {
		if err := netns.Set(orig); err != nil {
			panic(fmt.Sprintf("back to the host netns: %v", err)) // the thread must not run on elsewhere
		}
	}()
	f()
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func prefixNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// syncBuffer is a bytes.Buffer safe for a process's output and a test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var _ = context.Background

func handlerPeerPID(socket string) (int, error) {
	return handler.PeerPID(context.Background(), socket)
}

// libvirtSocket is a path that reaches the pod's libvirt socket, as the
// handler dials it (the folder's own path is too long for a socket
// address), until the test ends.
func (p *testPod) libvirtSocket(t *testing.T) string {
	t.Helper()
	f, err := launcher.OpenFolder(p.Host)
	if err != nil {
		t.Fatal(err)
	}
	socket, release, err := f.LibvirtSocket()
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = release(); _ = f.Close() })
	return socket
}

// libvirtURI is the URI of the pod's libvirt as the handler connects.
func (p *testPod) libvirtURI(t *testing.T) string { return libvirtd.SocketURI(p.libvirtSocket(t)) }
