package netns_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/internal/linuxproc"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/virt/libvirtd"
	"github.com/virtkit/virtkit/virt/network"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// testPod is a "pod" network namespace joined to this host's namespace by
// a veth pair, as a CNI plugin makes it: eth0 in the pod with PodIP and a
// default route via HostIP, which sits on the host end.
type testPod struct {
	Name     string // network namespace name (testenv.NamePrefix()...)
	Path     string // /run/netns/Name
	NS       vnetns.NsHandle
	HostVeth string
	HostIP   netip.Prefix
	PodIP    netip.Prefix
	// HostIP6 and PodIP6 are set for a dual-stack pod (newDualStackPod):
	// fd99:X::1/64 on the host end, fd99:X::2/64 on eth0 (no default route).
	HostIP6 netip.Prefix
	PodIP6  netip.Prefix
}

// newDualStackPod is newPod with IPv6 addresses on the veth pair too.
func newDualStackPod(t testing.TB) *testPod {
	t.Helper()
	p := newPod(t)
	x := p.PodIP.Addr().As4()[2]
	p.HostIP6 = netip.PrefixFrom(netip.AddrFrom16([16]byte{0xfd, 0x99, 0, x, 15: 1}), 64)
	p.PodIP6 = netip.PrefixFrom(netip.AddrFrom16([16]byte{0xfd, 0x99, 0, x, 15: 2}), 64)
	host, err := netlink.LinkByName(p.HostVeth)
	must(t, err)
	must(t, netlink.AddrAdd(host, &netlink.Addr{IPNet: prefixNet(p.HostIP6), Flags: unix.IFA_F_NODAD}))
	h, err := netlink.NewHandleAt(p.NS)
	must(t, err)
	defer h.Close()
	eth0, err := h.LinkByName("eth0")
	must(t, err)
	must(t, h.AddrAdd(eth0, &netlink.Addr{IPNet: prefixNet(p.PodIP6), Flags: unix.IFA_F_NODAD}))
	return p
}

var podSeq atomic.Uint32

// newPod makes a pod namespace on a private 10.99.X.0/24 subnet (X from the
// test process's PID and a counter, so parallel runs do not clash); traffic
// stays on this machine. Everything is removed when the test ends.
func newPod(t testing.TB) *testPod {
	t.Helper()
	testenv.Integration(t)
	n := podSeq.Add(1)
	x := byte((os.Getpid()*7+int(n))%230 + 20)
	p := &testPod{
		Name:     testenv.NamePrefix() + "pod" + strconv.Itoa(int(n)),
		HostVeth: "vk" + strconv.Itoa(os.Getpid()%100000) + "h" + strconv.Itoa(int(n)),
		HostIP:   netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 99, x, 1}), 24),
		PodIP:    netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 99, x, 2}), 24),
	}
	p.Path = "/run/netns/" + p.Name

	func() {
		runtime.LockOSThread()
		orig, err := vnetns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			t.Fatalf("current netns: %v", err)
		}
		defer orig.Close()
		p.NS, err = vnetns.NewNamed(p.Name) // also enters it
		if serr := vnetns.Set(orig); serr != nil {
			t.Fatalf("back to the host netns: %v", serr) // thread stays locked and dies
		}
		runtime.UnlockOSThread()
		if err != nil {
			t.Fatalf("create netns %s: %v", p.Name, err)
		}
	}()
	t.Cleanup(func() {
		if l, err := netlink.LinkByName(p.HostVeth); err == nil {
			_ = netlink.LinkDel(l)
		}
		p.NS.Close()
		if err := vnetns.DeleteNamed(p.Name); err != nil {
			t.Errorf("delete netns %s: %v", p.Name, err)
		}
	})

	la := netlink.NewLinkAttrs()
	la.Name = p.HostVeth
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: "eth0", PeerNamespace: netlink.NsFd(int(p.NS))}); err != nil {
		t.Fatalf("veth %s <-> %s/eth0: %v", p.HostVeth, p.Name, err)
	}
	host, err := netlink.LinkByName(p.HostVeth)
	must(t, err)
	must(t, netlink.AddrAdd(host, &netlink.Addr{IPNet: prefixNet(p.HostIP)}))
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
	must(t, h.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: p.HostIP.Addr().AsSlice()}))
	return p
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

// startLibvirtdIn starts a private libvirtd whose guests live in the pod's
// network namespace, so that QEMU finds the tap there by name. libvirtd.Start
// forks from the calling OS thread, and a child inherits that thread's
// network namespace: the start runs on a locked thread switched into the pod
// (with vnetns.Set, which unlike `ip netns exec` does not remount /sys).
func startLibvirtdIn(t testing.TB, p *testPod) *libvirtd.Daemon {
	t.Helper()
	cfg := libvirtd.Config{Dir: testenv.Dir(t), CacheDir: testenv.CapabilitiesCache(t)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var d *libvirtd.Daemon
	var err error
	func() {
		runtime.LockOSThread()
		orig, gerr := vnetns.Get()
		if gerr != nil {
			runtime.UnlockOSThread()
			err = gerr
			return
		}
		defer orig.Close()
		if err = vnetns.Set(p.NS); err != nil {
			runtime.UnlockOSThread()
			return
		}
		d, err = libvirtd.Start(ctx, cfg, libvirtd.WithEnv(testenv.OwnerEnv+"="+strconv.Itoa(os.Getpid())))
		if serr := vnetns.Set(orig); serr != nil {
			t.Fatalf("back to the host netns: %v", serr)
		}
		runtime.UnlockOSThread()
	}()
	if err != nil {
		t.Fatalf("libvirtd in %s: %v", p.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := d.Stop(ctx); err != nil {
			t.Errorf("stop libvirtd: %v", err)
		}
		left, err := linuxproc.List(linuxproc.SeesMountFrom(cfg.Dir))
		if err != nil {
			t.Errorf("%v", err)
		}
		for _, p := range left {
			t.Errorf("left behind by libvirtd: %s", p)
		}
	})
	return d
}

// bootGuest defines and starts the test guest with one virtio NIC on the
// planned tap (type ethernet, managed='no', as virt/domain writes it) and
// returns its console log path and a func that destroys it. It speaks to
// libvirt directly: virt/network must not depend on virt/domain, not even in
// tests.
func bootGuest(t testing.TB, d *libvirtd.Daemon, name string, ip network.InterfacePlan, disks ...libvirtxml.DomainDisk) (string, func()) {
	t.Helper()
	return boot(t, d, name, ip, false, disks...)
}

// bootGuestQueues is bootGuest with the NIC's queues set from the plan, as
// virt/domain writes them under emulation (driver qemu).
func bootGuestQueues(t testing.TB, d *libvirtd.Daemon, name string, ip network.InterfacePlan) (string, func()) {
	t.Helper()
	return boot(t, d, name, ip, true)
}

func boot(t testing.TB, d *libvirtd.Daemon, name string, ip network.InterfacePlan, queues bool, disks ...libvirtxml.DomainDisk) (string, func()) {
	t.Helper()
	g := testenv.Guest(t)
	dir := testenv.Dir(t)
	consoleLog := filepath.Join(dir, name+".console.log")
	doc := testguest.Domain(name, g, 256, consoleLog)
	nic := libvirtxml.DomainInterface{
		Source: &libvirtxml.DomainInterfaceSource{Ethernet: &libvirtxml.DomainInterfaceSourceEthernet{}},
		Target: &libvirtxml.DomainInterfaceTarget{Dev: ip.TapName, Managed: "no"},
		Model:  &libvirtxml.DomainInterfaceModel{Type: "virtio"},
		MAC:    &libvirtxml.DomainInterfaceMAC{Address: ip.MAC},
	}
	if ip.MTU > 0 {
		nic.MTU = &libvirtxml.DomainInterfaceMTU{Size: uint(ip.MTU)}
	}
	if queues && ip.Queues > 1 {
		nic.Driver = &libvirtxml.DomainInterfaceDriver{Name: "qemu", Queues: uint(ip.Queues)}
	}
	doc.Devices.Interfaces = []libvirtxml.DomainInterface{nic}
	doc.Devices.Disks = append(doc.Devices.Disks, disks...)
	xml, err := doc.Marshal()
	must(t, err)
	conn, err := libvirt.NewConnect(d.URI())
	if err != nil {
		t.Fatalf("connect %s: %v", d.URI(), err)
	}
	t.Cleanup(func() { _, _ = conn.Close() })
	dom, err := conn.DomainDefineXML(xml)
	if err != nil {
		t.Fatalf("define %s: %v", name, err)
	}
	t.Cleanup(func() { _ = dom.Free() })
	if err := dom.Create(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	var once sync.Once
	destroy := func() {
		once.Do(func() {
			if active, err := dom.IsActive(); err == nil && active {
				_ = dom.Destroy()
			}
			_ = dom.Undefine()
		})
	}
	t.Cleanup(destroy)
	return consoleLog, destroy
}

// seedDisk writes a NoCloud seed ISO whose user-data runs script in the
// guest, as a read-only virtio disk vdb.
func seedDisk(t testing.TB, script string) libvirtxml.DomainDisk {
	t.Helper()
	dir := testenv.Dir(t)
	must(t, os.WriteFile(filepath.Join(dir, "user-data"), []byte(script), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "meta-data"), []byte("instance-id: net-test\nlocal-hostname: net-test\n"), 0o644))
	iso := filepath.Join(dir, "seed.iso")
	out, err := exec.Command("genisoimage", "-quiet", "-output", iso, "-volid", "cidata", "-joliet", "-rock",
		filepath.Join(dir, "user-data"), filepath.Join(dir, "meta-data")).CombinedOutput()
	if err != nil {
		t.Fatalf("genisoimage (Debian package genisoimage): %v: %s", err, out)
	}
	return libvirtxml.DomainDisk{
		Device:   "disk",
		Driver:   &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "raw"},
		Source:   &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: iso}},
		Target:   &libvirtxml.DomainDiskTarget{Dev: "vdb", Bus: "virtio"},
		ReadOnly: &libvirtxml.DomainDiskReadOnly{},
	}
}

// snapshot describes a namespace's links, addresses, routes and nftables
// rules, for comparing before setup and after teardown.
func snapshot(t testing.TB, ns vnetns.NsHandle) []string {
	t.Helper()
	h, err := netlink.NewHandleAt(ns)
	must(t, err)
	defer h.Close()
	var out []string
	links, err := h.LinkList()
	must(t, err)
	names := map[int]string{}
	for _, l := range links {
		names[l.Attrs().Index] = l.Attrs().Name
	}
	for _, l := range links {
		a := l.Attrs()
		out = append(out, fmt.Sprintf("link %s type=%s mac=%s mtu=%d master=%s alias=%q up=%v",
			a.Name, l.Type(), a.HardwareAddr, a.MTU, names[a.MasterIndex], a.Alias, a.Flags&1 != 0))
		addrs, err := h.AddrList(l, netlink.FAMILY_ALL)
		must(t, err)
		for _, ad := range addrs {
			// Link-local IPv6 addresses come and go with a link's carrier.
			if ad.IPNet.IP.IsLinkLocalUnicast() {
				continue
			}
			out = append(out, "addr "+a.Name+" "+ad.IPNet.String())
		}
	}
	routes, err := h.RouteList(nil, netlink.FAMILY_ALL)
	must(t, err)
	for _, r := range routes {
		if r.Dst != nil && (r.Dst.IP.IsLinkLocalUnicast() || r.Dst.IP.IsMulticast()) {
			continue
		}
		out = append(out, fmt.Sprintf("route %v via %v dev %s", r.Dst, r.Gw, names[r.LinkIndex]))
	}
	c, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	must(t, err)
	tables, err := c.ListTables()
	must(t, err)
	for _, tb := range tables {
		out = append(out, fmt.Sprintf("nft table %d %s", tb.Family, tb.Name))
		chains, err := c.ListChainsOfTableFamily(tb.Family)
		must(t, err)
		for _, ch := range chains {
			if ch.Table.Name != tb.Name {
				continue
			}
			rules, err := c.GetRules(tb, ch)
			must(t, err)
			out = append(out, fmt.Sprintf("nft chain %s/%s rules=%d", tb.Name, ch.Name, len(rules)))
		}
	}
	sort.Strings(out)
	return out
}
