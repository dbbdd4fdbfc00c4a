package netns

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/virtkit/virtkit/virt/network"
)

// raInterval is how often unsolicited router advertisements are sent
// (RFC 4861 allows 4 s to 1800 s); solicitations are answered at once.
const raInterval = 10 * time.Second

// raSender sends one dual-stack masquerade guest router advertisements on
// its tap: an AF_PACKET socket bound to the tap, like the DHCPv4 server's,
// so it sends and hears only the guest's link.
type raSender struct {
	file  *os.File
	tapIx int
	ra    routerAdvert
	log   logr.Logger

	stopOnce sync.Once
	stopping atomic.Bool
	stop     chan struct{}
	done     sync.WaitGroup
	err      error
}

var (
	allNodes    = netip.MustParseAddr("ff02::1")
	allNodesMAC = net.HardwareAddr{0x33, 0x33, 0, 0, 0, 1}
	routerLL    = netip.MustParseAddr(network.RouterLinkLocal)
)

// rsFilter accepts ICMPv6 router solicitations without extension headers.
// Like the DHCP server's, the socket takes every protocol (ETH_P_ALL) to see
// a bridge port's frames; offsets are from the IPv6 header.
var rsFilter = []unix.SockFilter{
	{Code: 0x28, K: 0xfffff000},           // ldh [protocol]
	{Code: 0x15, Jt: 0, Jf: 5, K: 0x86dd}, // jeq #ETH_P_IPV6
	{Code: 0x30, K: 6},                    // ldb [6]     next header
	{Code: 0x15, Jt: 0, Jf: 3, K: 58},     // jeq #ICMPv6
	{Code: 0x30, K: 40},                   // ldb [40]    ICMPv6 type
	{Code: 0x15, Jt: 0, Jf: 1, K: 133},    // jeq #router solicitation
	{Code: 0x06, K: 0xffff},               // ret accept
	{Code: 0x06, K: 0},                    // ret drop
}

// startRA starts sending router advertisements for plan's IPv6 guest on its
// tap; it returns nil, nil when the plan gives the guest no IPv6 address.
// It runs on the namespace's thread (called from inside n.do).
func startRA(plan *network.InterfacePlan, log logr.Logger) (*raSender, error) {
	v6 := network.IPv6s(plan.GuestIPs)
	if len(v6) == 0 {
		return nil, nil
	}
	guest, err := netip.ParsePrefix(v6[0])
	if err != nil {
		return nil, fmt.Errorf("guest address %s: %w", v6[0], err)
	}
	br, err := netlink.LinkByName(plan.Bridge)
	if err != nil {
		return nil, fmt.Errorf("bridge %s: %w", plan.Bridge, err)
	}
	tap, err := netlink.LinkByName(plan.TapName)
	if err != nil {
		return nil, fmt.Errorf("tap %s: %w", plan.TapName, err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("router advertisement socket on tap %s: %w", plan.TapName, err)
	}
	prog := unix.SockFprog{Len: uint16(len(rsFilter)), Filter: &rsFilter[0]}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("router advertisement socket on tap %s: attach filter: %w", plan.TapName, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: tap.Attrs().Index}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind router advertisement socket to tap %s: %w", plan.TapName, err)
	}
	s := &raSender{
		file:  os.NewFile(uintptr(fd), "ra:"+plan.TapName),
		tapIx: tap.Attrs().Index,
		ra:    routerAdvert{RouterMAC: br.Attrs().HardwareAddr, Prefix: guest.Masked(), MTU: plan.MTU, Lifetime: 1800},
		log:   log,
		stop:  make(chan struct{}),
	}
	s.done.Add(2)
	go s.listen()
	go s.periodic()
	return s, nil
}

func (s *raSender) periodic() {
	defer s.done.Done()
	t := time.NewTicker(raInterval)
	defer t.Stop()
	for {
		s.send()
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

func (s *raSender) listen() {
	defer s.done.Done()
	s.err = receiveFrames(s.file, &s.stopping, s.log, func(frame []byte) {
		if isRouterSolicit(frame) {
			s.send()
		}
	})
}

// send multicasts one advertisement to all nodes on the tap.
func (s *raSender) send() {
	pkt := ipv6Packet(routerLL, allNodes, s.ra.marshal(routerLL, allNodes))
	to := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_IPV6), Ifindex: s.tapIx, Halen: 6}
	copy(to.Addr[:], allNodesMAC)
	// Without a guest attached the tap drops what it is given (EIO): not an error.
	if serr := sendFrame(s.file, pkt, to); serr != nil && serr != unix.EIO {
		s.log.Error(serr, "router advertisement send")
		return
	}
	s.log.V(2).Info("router advertisement sent", "prefix", s.ra.Prefix)
}

// Stop ends sending and closes the socket; safe to call twice.
func (s *raSender) Stop() error {
	s.stopOnce.Do(func() {
		s.stopping.Store(true)
		close(s.stop)
		_ = s.file.Close()
	})
	s.done.Wait()
	return s.err
}
