package network

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Configurator performs plans in one pod network namespace. [NetNS] does it
// for real; [Fake] in memory, for tests of callers.
type Configurator interface {
	// Discover lists the pod's interfaces (loopback excluded): the planner's input.
	Discover(ctx context.Context) ([]PodInterface, error)
	// Setup creates what plan needs (taps, bridges, addresses, NAT rules).
	// Running it again on a namespace it already set up changes nothing.
	Setup(ctx context.Context, plan Plan) error
	// Teardown removes what Setup created for plan, and gives a bridge
	// binding's pod interface back its addresses, MAC and routes. Missing
	// objects are not an error.
	Teardown(ctx context.Context, plan Plan) error
	// StartDHCP serves the guest of one planned interface its IPv4 address,
	// gateway, DNS and MTU (and a dual-stack guest its router
	// advertisements) until the server is stopped.
	StartDHCP(ctx context.Context, plan InterfacePlan) (DHCPServer, error)
}

// DHCPServer is a running DHCP server.
type DHCPServer interface {
	// Stop ends the server and releases its socket; it is safe to call twice.
	Stop() error
}

var (
	_ Configurator = (*NetNS)(nil)
	_ DHCPServer   = (*DHCPv4Server)(nil)
)

// Option changes a [NetNS].
type Option func(*NetNS)

// WithLogger sets the logger for setup, teardown and DHCP events. The
// default discards.
func WithLogger(l logr.Logger) Option { return func(n *NetNS) { n.log = l } }

// WithLeaseTime sets the DHCP lease time handed out (default 24 h).
func WithLeaseTime(d time.Duration) Option { return func(n *NetNS) { n.lease = d } }

// NetNS is a pod's network namespace, opened by path. Its methods run their
// work on an OS thread switched into the namespace, so the caller's threads
// never change namespace. It is safe for concurrent use.
type NetNS struct {
	path   string
	handle netns.NsHandle
	// mu serializes Setup and Teardown: each reads the namespace, then changes it.
	mu    sync.Mutex
	log   logr.Logger
	lease time.Duration
}

// Open opens the network namespace at path (/run/netns/NAME,
// /proc/PID/ns/net, or a bind mount of either). Close releases it.
func Open(path string, opts ...Option) (*NetNS, error) {
	h, err := netns.GetFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("network: open network namespace %s: %w", path, err)
	}
	n := &NetNS{path: path, handle: h, log: logr.Discard(), lease: 24 * time.Hour}
	for _, o := range opts {
		o(n)
	}
	return n, nil
}

// Path is the path the namespace was opened by.
func (n *NetNS) Path() string { return n.path }

// Close releases the namespace handle; what Setup made stays.
func (n *NetNS) Close() error { return n.handle.Close() }

// do runs f on an OS thread that is in the namespace. Netlink sockets, tun
// devices, /proc/sys/net and sockets made inside f belong to the namespace.
// f runs on a goroutine of its own, locked to its thread: if the thread
// cannot be switched back it stays locked, so the Go runtime ends it with the
// goroutine instead of running anything else in the wrong namespace.
func (n *NetNS) do(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("network: current network namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := netns.Set(n.handle); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("network: enter network namespace %s: %w", n.path, err)
			return
		}
		ferr := f()
		if err := netns.Set(orig); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("network: leave network namespace %s: %w", n.path, err))
			return // still locked: the thread ends with this goroutine
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// Discover lists the namespace's interfaces except loopback, with their
// global addresses, routes (main table) and MTU, sorted by name.
func (n *NetNS) Discover(ctx context.Context) ([]PodInterface, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []PodInterface
	err := n.do(func() error {
		links, err := retryDump(netlink.LinkList)
		if err != nil {
			return fmt.Errorf("network: list links in %s: %w", n.path, err)
		}
		for _, l := range links {
			a := l.Attrs()
			if a.Flags&net.FlagLoopback != 0 {
				continue
			}
			pi, err := describe(l)
			if err != nil {
				return fmt.Errorf("network: %s in %s: %w", a.Name, n.path, err)
			}
			out = append(out, pi)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

func describe(l netlink.Link) (PodInterface, error) {
	a := l.Attrs()
	pi := PodInterface{Name: a.Name, MTU: a.MTU}
	if len(a.HardwareAddr) > 0 {
		pi.MAC = a.HardwareAddr.String()
	}
	addrs, err := retryDump(func() ([]netlink.Addr, error) { return netlink.AddrList(l, netlink.FAMILY_ALL) })
	if err != nil {
		return pi, err
	}
	for _, ad := range addrs {
		if ad.Scope != unix.RT_SCOPE_UNIVERSE || ad.IPNet == nil {
			continue
		}
		pi.IPs = append(pi.IPs, ad.IPNet.String())
	}
	routes, err := retryDump(func() ([]netlink.Route, error) { return netlink.RouteList(l, netlink.FAMILY_ALL) })
	if err != nil {
		return pi, err
	}
	for _, r := range routes {
		if r.Gw == nil {
			// Connected routes come back with the address.
			continue
		}
		gw, _ := netip.AddrFromSlice(r.Gw)
		dst := "0.0.0.0/0"
		if gw.Unmap().Is6() {
			dst = "::/0"
		}
		if r.Dst != nil {
			dst = r.Dst.String()
		}
		pi.Routes = append(pi.Routes, Route{Dst: dst, Gateway: gw.Unmap().String()})
	}
	return pi, nil
}

// retryDump repeats a netlink dump that the kernel interrupted because the
// namespace changed meanwhile (its result may be inconsistent).
func retryDump[T any](dump func() ([]T, error)) ([]T, error) {
	var out []T
	var err error
	for range 5 {
		out, err = dump()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return out, err
		}
	}
	return out, err
}
