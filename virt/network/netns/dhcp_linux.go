package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/virtkit/virtkit/virt/network"
)

// DHCPv4Server answers one guest's DHCPv4 requests on its tap. It reads and
// writes IPv4 frames on the tap itself (an AF_PACKET socket bound to it, with
// a kernel filter for UDP port 67), so it needs no address in the pod, works
// while the tap is a bridge port, and neither sees requests from the pod's
// own network nor sends replies there. It answers only the planned MAC.
type DHCPv4Server struct {
	file  *os.File
	tap   string
	tapIx int
	mac   net.HardwareAddr
	lease *lease
	log   logr.Logger
	// ra sends a dual-stack guest its router advertisements; nil for IPv4 only.
	ra *raSender

	stopOnce sync.Once
	stopping atomic.Bool
	done     chan struct{}
	err      error
}

// StartDHCP starts a DHCPv4 server for the guest of plan on its tap, in the
// namespace, serving from a goroutine of this process until Stop. The tap
// must exist (Setup made it). It gives the first planned IPv4 address with
// its mask, the gateways, DNS servers and search domain, the MTU (option 26),
// routes (option 121), the host name and the lease time (WithLeaseTime).
// When the plan gives the guest an IPv6 address (dual-stack masquerade) it
// also sends the guest router advertisements for SLAAC; Stop ends both.
func (n *NetNS) StartDHCP(ctx context.Context, plan network.InterfacePlan) (network.DHCPServer, error) {
	return n.startDHCP(ctx, plan)
}

func (n *NetNS) startDHCP(ctx context.Context, plan network.InterfacePlan) (*DHCPv4Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("network: DHCP for interface %q: %w", plan.Interface, err)
	}
	l, err := leaseFor(&plan, n.lease)
	if err != nil {
		return nil, fmt.Errorf("network: DHCP for interface %q: %w", plan.Interface, err)
	}
	mac, err := net.ParseMAC(plan.MAC)
	if err != nil {
		return nil, fmt.Errorf("network: DHCP for interface %q: mac: %w", plan.Interface, err)
	}
	s := &DHCPv4Server{tap: plan.TapName, mac: mac, lease: l, done: make(chan struct{}),
		log: n.log.WithValues("interface", plan.Interface, "tap", plan.TapName)}
	err = n.do(func() error {
		tap, err := netlink.LinkByName(plan.TapName)
		if err != nil {
			return fmt.Errorf("tap %s: %w", plan.TapName, err)
		}
		s.tapIx = tap.Attrs().Index
		fd, err := packetSocket(s.tapIx)
		if err != nil {
			return fmt.Errorf("socket on tap %s: %w", plan.TapName, err)
		}
		s.file = os.NewFile(uintptr(fd), "dhcp:"+plan.TapName)
		s.ra, err = startRA(&plan, s.log)
		if err != nil {
			_ = s.file.Close()
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("network: DHCP for interface %q: %w", plan.Interface, err)
	}
	go s.serve()
	s.log.V(1).Info("DHCP server started", "address", l.addr, "mac", mac)
	return s, nil
}

// htons is the network-order protocol number AF_PACKET wants.
func htons(v uint16) uint16 { return v<<8 | v>>8 }

// dhcpFilter accepts unfragmented IPv4 UDP to port 67. The socket takes
// every protocol (ETH_P_ALL): only such taps see a bridge port's frames
// before the bridge consumes them. Offsets are from the network header (the
// socket is SOCK_DGRAM); 0xfffff000 is the kernel's skb->protocol.
var dhcpFilter = []unix.SockFilter{
	{Code: 0x28, K: 0xfffff000},           // ldh [protocol]
	{Code: 0x15, Jt: 0, Jf: 8, K: 0x0800}, // jeq #ETH_P_IP
	{Code: 0x30, K: 9},                    // ldb [9]            IP protocol
	{Code: 0x15, Jt: 0, Jf: 6, K: 17},     // jeq #UDP
	{Code: 0x28, K: 6},                    // ldh [6]            flags+fragment
	{Code: 0x45, Jt: 4, Jf: 0, K: 0x1fff}, // jset #0x1fff      a fragment: drop
	{Code: 0xb1, K: 0},                    // ldxb 4*([0]&0xf)   header length
	{Code: 0x48, K: 2},                    // ldh [x+2]          destination port
	{Code: 0x15, Jt: 0, Jf: 1, K: 67},     // jeq #67
	{Code: 0x06, K: 0xffff},               // ret accept
	{Code: 0x06, K: 0},                    // ret drop
}

// packetSocket opens a packet socket on the link ifindex with the DHCP
// filter. It is made with protocol 0 (it receives nothing) and starts
// receiving only at bind, after the filter is attached.
func packetSocket(ifindex int) (int, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return -1, err
	}
	prog := unix.SockFprog{Len: uint16(len(dhcpFilter)), Filter: &dhcpFilter[0]}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("attach filter: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("bind: %w", err)
	}
	return fd, nil
}

func (s *DHCPv4Server) serve() {
	defer close(s.done)
	s.err = receiveFrames(s.file, &s.stopping, s.log, s.handle)
}

func (s *DHCPv4Server) handle(pkt []byte) {
	resp, frame := s.lease.answer(pkt, s.mac)
	if resp == nil {
		return
	}
	to := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_IP), Ifindex: s.tapIx, Halen: 6}
	copy(to.Addr[:], s.mac)
	if serr := sendFrame(s.file, frame, to); serr != nil {
		s.log.Error(serr, "DHCP send", "type", resp.msgType)
		return
	}
	s.log.V(1).Info("DHCP reply", "type", resp.msgType, "address", s.lease.addr)
}

// Stop ends the server and closes its socket. It returns the error that
// ended serving early, if any.
func (s *DHCPv4Server) Stop() error {
	s.stopOnce.Do(func() {
		s.stopping.Store(true)
		_ = s.file.Close()
	})
	<-s.done
	if s.ra != nil {
		return errors.Join(s.err, s.ra.Stop())
	}
	return s.err
}
