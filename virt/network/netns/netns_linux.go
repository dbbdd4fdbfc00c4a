package netns

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
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/virtkit/virtkit/virt/network"
)

var (
	_ network.Configurator = (*NetNS)(nil)
	_ network.DHCPServer   = (*DHCPv4Server)(nil)
)

// Option changes a [NetNS].
type Option func(*NetNS)

// WithLogger sets the logger for setup, teardown and DHCP events. The
// default discards.
func WithLogger(l logr.Logger) Option { return func(n *NetNS) { n.log = l } }

// WithTapOwner gives the taps Setup makes to user uid and group gid
// (TUNSETOWNER, TUNSETGROUP), so that a QEMU that runs as that user, with
// no capability, may open them. By default a tap is root's: only a process
// with CAP_NET_ADMIN in the namespace opens it.
func WithTapOwner(uid, gid int) Option {
	return func(n *NetNS) { n.tapOwner = &tapOwner{uid: uid, gid: gid} }
}

// WithLeaseTime sets the DHCP lease time handed out (default 24 h).
func WithLeaseTime(d time.Duration) Option { return func(n *NetNS) { n.lease = d } }

// NetNS is a pod's network namespace, opened by path. Its methods run their
// work on an OS thread switched into the namespace, so the caller's threads
// never change namespace. It is safe for concurrent use.
type NetNS struct {
	path   string
	handle vnetns.NsHandle
	// mu serializes Setup and Teardown: each reads the namespace, then changes it.
	mu    sync.Mutex
	log   logr.Logger
	lease time.Duration
	// tapOwner, when set, owns the taps Setup makes.
	tapOwner *tapOwner
}

type tapOwner struct{ uid, gid int }

// Open opens the network namespace at path (/run/netns/NAME,
// /proc/PID/ns/net, or a bind mount of either). Close releases it.
func Open(path string, opts ...Option) (*NetNS, error) {
	h, err := vnetns.GetFromPath(path)
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
		orig, err := vnetns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("network: current network namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := vnetns.Set(n.handle); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("network: enter network namespace %s: %w", n.path, err)
			return
		}
		ferr := f()
		if err := vnetns.Set(orig); err != nil {
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
func (n *NetNS) Discover(ctx context.Context) ([]network.PodInterface, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []network.PodInterface
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

func describe(l netlink.Link) (network.PodInterface, error) {
	a := l.Attrs()
	pi := network.PodInterface{Name: a.Name, MTU: a.MTU}
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
		pi.Routes = append(pi.Routes, network.Route{Dst: dst, Gateway: gw.Unmap().String()})
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
