package netns_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"
	"gotest.tools/v3/assert"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/virt/network"
	"github.com/virtkit/virtkit/virt/network/netns"
	"github.com/virtkit/virtkit/virt/network/networktest"
)

// openPod opens the pod's namespace for virt/network, discovers its
// interfaces and plans vmi on them.
func openPod(t *testing.T, p *testPod, vmi *virtv1.VirtualMachineInstance, opts ...netns.Option) (*netns.NetNS, network.Plan) {
	t.Helper()
	n, err := netns.Open(p.Path, opts...)
	must(t, err)
	t.Cleanup(func() { _ = n.Close() })
	found, err := n.Discover(context.Background())
	must(t, err)
	ips := []string{p.PodIP.String()}
	if p.PodIP6.IsValid() {
		ips = append(ips, p.PodIP6.String())
	}
	want := []network.PodInterface{{Name: "eth0", IPs: ips, MTU: 1500,
		Routes: []network.Route{{Dst: "0.0.0.0/0", Gateway: p.HostIP.Addr().String()}}}}
	if d := cmp.Diff(want, found, cmp.FilterPath(func(path cmp.Path) bool { return path.Last().String() == ".MAC" }, cmp.Ignore())); d != "" {
		t.Fatalf("Discover (-want +got):\n%s", d)
	}
	plan, err := network.MakePlan(vmi, found, network.WithDNS(network.DNS{Servers: []string{p.HostIP.Addr().String()}}))
	must(t, err)
	return n, plan
}

// waitMarked waits for a console line like testenv.WaitConsole; on failure
// it quotes every VIRTKIT- line but the heartbeats.
func waitMarked(t *testing.T, ctx context.Context, path string, re *regexp.Regexp) string {
	t.Helper()
	line, err := testguest.WaitLine(ctx, path, re)
	if err != nil {
		b, _ := os.ReadFile(path)
		var marked []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "VIRTKIT-") && !strings.Contains(l, testguest.HeartbeatLine) {
				marked = append(marked, l)
			}
		}
		t.Fatalf("%v; marked lines:\n%s", err, strings.Join(marked, "\n"))
	}
	return line
}

// httpGet fetches url until it answers or ctx ends.
func httpGet(ctx context.Context, t *testing.T, url string) string {
	t.Helper()
	c := &http.Client{Timeout: 3 * time.Second}
	var last error
	for ctx.Err() == nil {
		resp, err := c.Get(url)
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK {
				return string(b)
			}
			err = fmt.Errorf("status %s, %v", resp.Status, rerr)
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("GET %s: %v (last error: %v)", url, ctx.Err(), last)
	return ""
}

// Masquerade, dual stack: the guest gets 10.0.2.2/24 from our DHCP server
// and its fd10:0:2::/64 address by SLAAC from our router advertisements,
// reaches the host side with the pod's address over both families (NAT and
// NAT66 out), and the host side reaches its HTTP endpoint on the pod's IPv4
// and IPv6 addresses and a forwarded port (DNAT in); a port not listed is
// not forwarded. Setup twice changes nothing; teardown leaves the namespace
// as it was (IPv6 addresses, routes and the ip6 table included).
func TestMasqueradeGuest(t *testing.T) {
	testenv.Integration(t)
	p := newDualStackPod(t)
	vmi := networktest.VMIWith([]virtv1.Interface{networktest.Masquerade("default", virtv1.Port{Port: 80})}, []virtv1.Network{networktest.PodNetwork("default")})
	n, plan := openPod(t, p, vmi)
	ip := plan["default"]
	assert.Equal(t, len(ip.GuestIPs), 2, "guest IPs %v", ip.GuestIPs)
	guest6 := netip.MustParsePrefix(ip.GuestIPs[1])
	assert.Equal(t, netip.PrefixFrom(guest6.Addr(), 64).Masked().String(), "fd10:0:2::/64")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	before := snapshot(t, p.NS)
	must(t, n.Setup(ctx, plan))
	once := snapshot(t, p.NS)
	must(t, n.Setup(ctx, plan))
	if d := cmp.Diff(once, snapshot(t, p.NS)); d != "" {
		t.Errorf("a second Setup changed the namespace (-first +second):\n%s", d)
	}
	dhcp, err := n.StartDHCP(ctx, ip)
	must(t, err)
	defer dhcp.Stop()

	// Something outside the pod that the guest calls, on IPv4 and IPv6: it
	// must see the pod's address.
	seen := make(chan string, 8)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		seen <- host
		fmt.Fprint(w, "hello-from-outside")
	})
	var ports [2]string
	for i, addr := range []netip.Addr{p.HostIP.Addr(), p.HostIP6.Addr()} {
		ln, err := net.Listen("tcp", net.JoinHostPort(addr.String(), "0"))
		must(t, err)
		srv := &http.Server{Handler: handler}
		go srv.Serve(ln)
		defer srv.Close()
		_, ports[i], _ = net.SplitHostPort(ln.Addr().String())
	}
	g6 := guest6.Addr().As16()
	// busybox nc, not wget: the static busybox's wget crashes on these machines.
	script := fmt.Sprintf(`#!/bin/sh
call() {
	i=0
	while [ $i -lt 20 ]; do
		out=$(printf 'GET / HTTP/1.0\r\n\r\n' | nc $2 $3 2>/dev/null | tail -n1)
		if [ "$out" = hello-from-outside ]; then echo "$1 ok $out"; return 0; fi
		i=$((i+1)); sleep 1
	done
	echo "$1 failed"
}
call VIRTKIT-OUTBOUND %s %s
i=0
while [ $i -lt 20 ] && ! grep -q '^%x' /proc/net/if_inet6; do i=$((i+1)); sleep 1; done
echo "VIRTKIT-IPV6 $(grep '^fd10' /proc/net/if_inet6 | cut -d' ' -f1)"
call VIRTKIT-OUTBOUND6 %s %s
`, p.HostIP.Addr(), ports[0], g6[:], p.HostIP6.Addr(), ports[1])

	d := startLibvirtdIn(t, p)
	console, destroy := bootGuest(t, d, "masq", ip, seedDisk(t, script))
	netLine := testenv.WaitConsole(t, ctx, console, regexp.MustCompile(`VIRTKIT-NET eth0 .*event=bound`))
	wantNet := fmt.Sprintf("VIRTKIT-NET eth0 ip=10.0.2.2/24 gw=10.0.2.1 dns=%s mtu=1500 event=bound", p.HostIP.Addr())
	assert.Equal(t, strings.TrimSpace(netLine), wantNet)
	// The gateway's MAC is the same in every pod, with the guest's tap on
	// the bridge too: a migrated guest's ARP entry stays right.
	gw := "link " + ip.Bridge + " type=bridge mac=" + netns.MasqueradeBridgeMAC + " "
	assert.Assert(t, slices.ContainsFunc(snapshot(t, p.NS), func(l string) bool { return strings.HasPrefix(l, gw) }),
		"no %q in %v", gw, snapshot(t, p.NS))
	out := waitMarked(t, ctx, console, regexp.MustCompile(`^VIRTKIT-OUTBOUND `))
	assert.Equal(t, strings.TrimSpace(out), "VIRTKIT-OUTBOUND ok hello-from-outside")
	for _, want := range []netip.Addr{p.PodIP.Addr(), p.PodIP6.Addr()} {
		if want == p.PodIP6.Addr() {
			v6 := waitMarked(t, ctx, console, regexp.MustCompile(`^VIRTKIT-IPV6 `))
			assert.Equal(t, strings.TrimSpace(v6), fmt.Sprintf("VIRTKIT-IPV6 %x", g6[:]), "the guest's SLAAC address is not the planned one")
			out := waitMarked(t, ctx, console, regexp.MustCompile(`^VIRTKIT-OUTBOUND6 `))
			assert.Equal(t, strings.TrimSpace(out), "VIRTKIT-OUTBOUND6 ok hello-from-outside")
		}
		select {
		case from := <-seen:
			assert.Equal(t, from, want.String(), "the guest's traffic is not masqueraded behind the pod's address")
		case <-ctx.Done():
			t.Fatal("the outside server saw no request")
		}
	}
	testenv.WaitConsole(t, ctx, console, regexp.MustCompile(`^`+testguest.ReadyMarker))

	heartbeat := regexp.MustCompile(`^virtkit-guest net-test heartbeat=\d+`)
	page := httpGet(ctx, t, "http://"+p.PodIP.Addr().String()+":80/")
	assert.Assert(t, heartbeat.MatchString(page), "page %q", page)
	page = httpGet(ctx, t, "http://"+net.JoinHostPort(p.PodIP6.Addr().String(), "80")+"/")
	assert.Assert(t, heartbeat.MatchString(page), "IPv6 page %q", page)

	// Port 81 is not in ports: nothing in the pod listens, so the pod refuses.
	for _, a := range []netip.Addr{p.PodIP.Addr(), p.PodIP6.Addr()} {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(a.String(), "81"), 3*time.Second)
		if err == nil {
			c.Close()
			t.Errorf("port 81 is not forwarded but a connection to %s was accepted", a)
		}
	}

	destroy()
	must(t, dhcp.Stop())
	must(t, n.Teardown(ctx, plan))
	if diff := cmp.Diff(before, snapshot(t, p.NS)); diff != "" {
		t.Errorf("teardown left the namespace changed (-before +after):\n%s", diff)
	}
	must(t, n.Teardown(ctx, plan))
}

// Bridge binding: the guest takes the pod's address and MAC by DHCP and
// answers on the pod's address; teardown gives the pod interface back its
// address, MAC and default route.
func TestBridgeGuest(t *testing.T) {
	testenv.Integration(t)
	p := newPod(t)
	vmi := networktest.VMIWith([]virtv1.Interface{networktest.Bridge("default")}, []virtv1.Network{networktest.PodNetwork("default")})
	n, plan := openPod(t, p, vmi)
	ip := plan["default"]
	assert.Equal(t, ip.MAC, ip.Pod.MAC)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	before := snapshot(t, p.NS)
	must(t, n.Setup(ctx, plan))
	once := snapshot(t, p.NS)
	must(t, n.Setup(ctx, plan))
	if d := cmp.Diff(once, snapshot(t, p.NS)); d != "" {
		t.Errorf("a second Setup changed the namespace (-first +second):\n%s", d)
	}
	dhcp, err := n.StartDHCP(ctx, ip)
	must(t, err)
	defer dhcp.Stop()

	d := startLibvirtdIn(t, p)
	console, destroy := bootGuest(t, d, "bridged", ip)
	netLine := testenv.WaitConsole(t, ctx, console, regexp.MustCompile(`VIRTKIT-NET eth0 .*event=bound`))
	wantNet := fmt.Sprintf("VIRTKIT-NET eth0 ip=%s gw=%s dns=%s mtu=1500 event=bound", p.PodIP, p.HostIP.Addr(), p.HostIP.Addr())
	assert.Equal(t, strings.TrimSpace(netLine), wantNet)
	testenv.WaitConsole(t, ctx, console, regexp.MustCompile(`^`+testguest.ReadyMarker))

	page := httpGet(ctx, t, "http://"+p.PodIP.Addr().String()+":80/")
	assert.Assert(t, regexp.MustCompile(`^virtkit-guest virtkit-guest heartbeat=\d+`).MatchString(page), "page %q", page)
	// The pod's address answers with the guest's (the pod's original) MAC.
	neigh, err := netlink.NeighList(0, netlink.FAMILY_V4)
	must(t, err)
	for _, nb := range neigh {
		if nb.IP.Equal(p.PodIP.Addr().AsSlice()) && nb.HardwareAddr != nil {
			assert.Equal(t, nb.HardwareAddr.String(), ip.MAC)
		}
	}

	destroy()
	must(t, dhcp.Stop())

	// A restarted handler has only the plan it saved (the pod interface has
	// no address left to discover): set up again (no change) and tear down
	// from a fresh handle with the plan read back from JSON.
	saved, err := json.Marshal(plan)
	must(t, err)
	var restored network.Plan
	must(t, json.Unmarshal(saved, &restored))
	n2, err := netns.Open(p.Path)
	must(t, err)
	defer n2.Close()
	must(t, n2.Setup(ctx, restored))
	if d := cmp.Diff(once, snapshot(t, p.NS)); d != "" {
		t.Errorf("Setup after a restart changed the namespace (-first +again):\n%s", d)
	}
	must(t, n2.Teardown(ctx, restored))
	if diff := cmp.Diff(before, snapshot(t, p.NS)); diff != "" {
		t.Errorf("teardown left the namespace changed (-before +after):\n%s", diff)
	}
}

// Bad input is rejected with a field error and the namespace stays as it
// was: by the planner (nothing to set up), by Setup's check of the plan, and
// when a step fails half-way (a foreign link holds the tap's name), where
// Setup removes again what it had made.
func TestBadInputLeavesNamespaceUntouched(t *testing.T) {
	testenv.Integration(t)
	p := newPod(t)
	ctx := context.Background()
	n, err := netns.Open(p.Path)
	must(t, err)
	defer n.Close()
	found, err := n.Discover(ctx)
	must(t, err)

	// A link called tap0 that virtkit did not make.
	h, err := netlink.NewHandleAt(p.NS)
	must(t, err)
	defer h.Close()
	la := netlink.NewLinkAttrs()
	la.Name = "tap0"
	must(t, h.LinkAdd(&netlink.Bridge{LinkAttrs: la})) // no dummy module on these kernels
	before := snapshot(t, p.NS)

	for _, vmi := range []*virtv1.VirtualMachineInstance{
		networktest.VMIWith([]virtv1.Interface{networktest.Masquerade("nope")}, []virtv1.Network{networktest.PodNetwork("default")}),
		networktest.VMIWith([]virtv1.Interface{networktest.Masquerade("default", virtv1.Port{Port: 70000})}, []virtv1.Network{networktest.PodNetwork("default")}),
		networktest.VMIWith([]virtv1.Interface{networktest.Masquerade("blue")}, []virtv1.Network{networktest.Multus("blue")}),
	} {
		_, err := network.MakePlan(vmi, found)
		var fe *network.FieldError
		assert.Assert(t, errors.As(err, &fe), "%v", err)
	}

	plan, err := network.MakePlan(networktest.VMIWith([]virtv1.Interface{networktest.Masquerade("default")}, []virtv1.Network{networktest.PodNetwork("default")}), found)
	must(t, err)
	bad := plan["default"]
	bad.Ports = []network.Port{{Protocol: "TCP", Port: 0}}
	err = n.Setup(ctx, network.Plan{"default": bad})
	assert.Assert(t, errors.Is(err, network.ErrInvalidPlan), "%v", err)
	if d := cmp.Diff(before, snapshot(t, p.NS)); d != "" {
		t.Errorf("rejected plan changed the namespace (-before +after):\n%s", d)
	}

	err = n.Setup(ctx, plan)
	assert.Assert(t, errors.Is(err, network.ErrForeignObject), "%v", err)
	assert.ErrorContains(t, err, `interface "default": link tap0`)
	if d := cmp.Diff(before, snapshot(t, p.NS)); d != "" {
		t.Errorf("failed setup left the namespace changed (-before +after):\n%s", d)
	}
	// Teardown does not delete what is not virtkit's.
	must(t, n.Teardown(ctx, plan))
	if d := cmp.Diff(before, snapshot(t, p.NS)); d != "" {
		t.Errorf("teardown touched a foreign link (-before +after):\n%s", d)
	}
}

// A multi-queue interface gets a multi-queue tap (persistent, no packet
// information, virtio-net headers) that QEMU opens with as many queues: the
// guest boots on it and takes its DHCP lease.
func TestMultiQueueGuest(t *testing.T) {
	testenv.Integration(t)
	p := newPod(t)
	vmi := networktest.VMIWith([]virtv1.Interface{networktest.Masquerade("default")}, []virtv1.Network{networktest.PodNetwork("default")},
		func(v *virtv1.VirtualMachineInstance) {
			on := true
			v.Spec.Domain.Devices.NetworkInterfaceMultiQueue = &on
			v.Spec.Domain.CPU = &virtv1.CPU{Cores: 4}
		})
	n, plan := openPod(t, p, vmi)
	ip := plan["default"]
	assert.Equal(t, ip.Queues, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	before := snapshot(t, p.NS)
	must(t, n.Setup(ctx, plan))

	h, err := netlink.NewHandleAt(p.NS)
	must(t, err)
	defer h.Close()
	l, err := h.LinkByName(ip.TapName)
	must(t, err)
	tap, ok := l.(*netlink.Tuntap)
	assert.Assert(t, ok, "%s is a %s", ip.TapName, l.Type())
	assert.Equal(t, tap.Mode, netlink.TUNTAP_MODE_TAP)
	want := netlink.TUNTAP_MULTI_QUEUE | netlink.TUNTAP_NO_PI | netlink.TUNTAP_VNET_HDR
	assert.Equal(t, tap.Flags&want, want, "flags %v", tap.Flags)
	assert.Assert(t, !tap.NonPersist)

	dhcp, err := n.StartDHCP(ctx, ip)
	must(t, err)
	defer dhcp.Stop()
	d := startLibvirtdIn(t, p)
	console, destroy := bootGuestQueues(t, d, "mq", ip)
	line := waitMarked(t, ctx, console, regexp.MustCompile(`VIRTKIT-NET eth0 .*event=bound`))
	assert.Assert(t, strings.Contains(line, "ip=10.0.2.2/24 gw=10.0.2.1"), line)

	destroy()
	must(t, dhcp.Stop())
	must(t, n.Teardown(ctx, plan))
	if diff := cmp.Diff(before, snapshot(t, p.NS)); diff != "" {
		t.Errorf("teardown left the namespace changed (-before +after):\n%s", diff)
	}
}

// With WithTapOwner the tap is the QEMU user's: the kernel lets a process of
// that user or group attach to it without CAP_NET_ADMIN, as a QEMU that runs
// as user 107 with no capability must. Without it the tap has no owner.
func TestTapOwner(t *testing.T) {
	testenv.Integration(t)
	for _, tc := range []struct {
		name         string
		opts         []netns.Option
		owner, group uint32
	}{
		{"owned", []netns.Option{netns.WithTapOwner(107, 107)}, 107, 107},
		{"unowned", nil, 0, 0}, // the kernel reports no owner, netlink reads 0
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod(t)
			vmi := networktest.VMIWith([]virtv1.Interface{networktest.Masquerade("default")}, []virtv1.Network{networktest.PodNetwork("default")})
			n, plan := openPod(t, p, vmi, tc.opts...)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			must(t, n.Setup(ctx, plan))
			defer func() { must(t, n.Teardown(ctx, plan)) }()
			h, err := netlink.NewHandleAt(p.NS)
			must(t, err)
			defer h.Close()
			l, err := h.LinkByName(plan["default"].TapName)
			must(t, err)
			tap, ok := l.(*netlink.Tuntap)
			assert.Assert(t, ok, "%s is a %s", l.Attrs().Name, l.Type())
			assert.Equal(t, tap.Owner, tc.owner)
			assert.Equal(t, tap.Group, tc.group)
		})
	}
}
