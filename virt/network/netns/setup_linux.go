package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/virtkit/virtkit/virt/network"
)

// aliasPrefix marks the links Setup makes (IFLA_IFALIAS "virtkit:<interface>"),
// so that Teardown deletes only those and Setup never adopts a stranger's.
const aliasPrefix = "virtkit:"

// undo is the list of steps that reverse what one Setup call did, run in
// reverse order when a later step fails.
type undo []func() error

func (u *undo) push(f func() error) { *u = append(*u, f) }

func (u undo) run() error {
	var errs []error
	for i := len(u) - 1; i >= 0; i-- {
		if err := u[i](); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Setup creates, for each planned interface, a tap for QEMU and a bridge in
// the namespace, and
//   - for masquerade: the gateway address on the bridge, IPv4 forwarding,
//     and an nftables table (virtkit-<interface>) that forwards the pod
//     address's ports to the guest and masquerades the guest's traffic; for
//     a dual-stack plan also the IPv6 gateway and fe80::1 on the bridge,
//     IPv6 forwarding and a table of family ip6 doing the same (NAT66);
//   - for bridge binding: moves the pod interface's addresses to the guest
//     (removes them from the pod interface), gives it PodPortMAC and
//     enslaves it to the bridge.
//
// Objects that already exist and carry virtkit's mark are kept, so a second
// Setup changes nothing. An invalid plan is rejected before anything is
// touched; when a step fails, what this call created is removed again.
func (n *NetNS) Setup(ctx context.Context, plan network.Plan) error {
	if err := plan.Check(); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.do(func() error {
		var u undo
		for _, name := range plan.Names() {
			if err := ctx.Err(); err != nil {
				return errors.Join(fmt.Errorf("network: setup: %w", err), u.run())
			}
			ip := plan[name]
			var err error
			switch ip.Binding {
			case network.BindingMasquerade:
				err = n.setupMasquerade(&u, &ip)
			case network.BindingBridge:
				err = n.setupBridge(&u, &ip)
			}
			if err != nil {
				if uerr := u.run(); uerr != nil {
					err = errors.Join(err, fmt.Errorf("network: undoing a failed setup: %w", uerr))
				}
				return err
			}
			n.log.V(1).Info("interface set up", "interface", name, "binding", ip.Binding, "tap", ip.TapName, "netns", n.path)
		}
		return nil
	})
}

func (n *NetNS) setupMasquerade(u *undo, ip *network.InterfacePlan) error {
	if _, err := netlink.LinkByName(ip.Pod.Name); err != nil {
		return setupErr(ip.Interface, "pod interface "+ip.Pod.Name, fmt.Errorf("%w: %v", network.ErrNoPodInterface, err))
	}
	br, err := ensureBridge(u, ip)
	if err != nil {
		return err
	}
	for _, s := range ip.BridgeIPs {
		if err := ensureAddr(u, ip.Interface, br, s); err != nil {
			return err
		}
	}
	if err := ensureTap(u, ip, br, n.tapOwner); err != nil {
		return err
	}
	if err := enableForwarding(u, ipForward); err != nil {
		return setupErr(ip.Interface, "net.ipv4.ip_forward", err)
	}
	if len(network.IPv6s(ip.GuestIPs)) > 0 {
		if err := enableForwarding(u, ipv6Forward); err != nil {
			return setupErr(ip.Interface, "net.ipv6.conf.all.forwarding", err)
		}
	}
	return ensureNAT(u, n.handle, ip)
}

func (n *NetNS) setupBridge(u *undo, ip *network.InterfacePlan) error {
	pod, err := netlink.LinkByName(ip.Pod.Name)
	if err != nil {
		return setupErr(ip.Interface, "pod interface "+ip.Pod.Name, fmt.Errorf("%w: %v", network.ErrNoPodInterface, err))
	}
	br, err := ensureBridge(u, ip)
	if err != nil {
		return err
	}
	if err := ensureTap(u, ip, br, n.tapOwner); err != nil {
		return err
	}
	if pod.Attrs().MasterIndex == br.Attrs().Index {
		return nil // enslaved by an earlier Setup: the rest is done
	}
	if pod.Attrs().MasterIndex != 0 {
		return setupErr(ip.Interface, "pod interface "+ip.Pod.Name, fmt.Errorf("already enslaved to link index %d", pod.Attrs().MasterIndex))
	}
	// The guest takes the pod interface's IPv4 addresses: remove them (their
	// routes go with them; undo and Teardown put both back).
	u.push(func() error { return restoreRoutes(ip, pod) })
	for _, s := range network.IPv4s(ip.Pod.IPs) {
		addr, err := netlink.ParseAddr(s)
		if err != nil {
			return setupErr(ip.Interface, "pod address "+s, err)
		}
		if err := netlink.AddrDel(pod, addr); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
			return setupErr(ip.Interface, "remove address "+s+" from "+ip.Pod.Name, err)
		}
		u.push(func() error { return ignoreExists(netlink.AddrAdd(pod, addr)) })
	}
	oldMAC := pod.Attrs().HardwareAddr
	newMAC, _ := net.ParseMAC(ip.PodPortMAC)
	if oldMAC.String() != newMAC.String() {
		// A MAC changes only while the link is down.
		if err := netlink.LinkSetDown(pod); err != nil {
			return setupErr(ip.Interface, "set "+ip.Pod.Name+" down", err)
		}
		u.push(func() error { return netlink.LinkSetUp(pod) })
		if err := netlink.LinkSetHardwareAddr(pod, newMAC); err != nil {
			return setupErr(ip.Interface, "set MAC of "+ip.Pod.Name, err)
		}
		u.push(func() error { return netlink.LinkSetHardwareAddr(pod, oldMAC) })
	}
	if err := netlink.LinkSetMaster(pod, br); err != nil {
		return setupErr(ip.Interface, "enslave "+ip.Pod.Name+" to "+ip.Bridge, err)
	}
	u.push(func() error { return netlink.LinkSetNoMaster(pod) })
	if err := netlink.LinkSetUp(pod); err != nil {
		return setupErr(ip.Interface, "set "+ip.Pod.Name+" up", err)
	}
	return nil
}

// ensureBridge returns the interface's bridge, creating it (up, with the pod
// interface's MTU) when missing.
// MasqueradeBridgeMAC is the MAC of every masquerade binding's bridge, the
// guest's gateway: the same in every launcher pod (KubeVirt's
// StaticMasqueradeBridgeMAC), so that a migrated guest's ARP entry for its
// gateway stays right on the target. Without it the bridge would take its
// tap's random MAC, and the guest's replies would go to the source pod's
// gateway MAC until its ARP entry expired.
const MasqueradeBridgeMAC = "02:00:00:00:00:00"

func ensureBridge(u *undo, ip *network.InterfacePlan) (netlink.Link, error) {
	attrs := netlink.NewLinkAttrs()
	attrs.Name = ip.Bridge
	if ip.MTU > 0 {
		attrs.MTU = ip.MTU
	}
	if ip.Binding == network.BindingMasquerade {
		attrs.HardwareAddr, _ = net.ParseMAC(MasqueradeBridgeMAC)
	}
	br, err := ensureLink(u, ip, ip.Bridge, func() error {
		return netlink.LinkAdd(&netlink.Bridge{LinkAttrs: attrs})
	})
	if err != nil {
		return nil, err
	}
	if err := netlink.LinkSetUp(br); err != nil {
		return nil, setupErr(ip.Interface, "set bridge "+ip.Bridge+" up", err)
	}
	return br, nil
}

// ensureTap makes the interface's persistent tap (multi-queue when the plan
// has more than one queue; owned by owner when set), enslaved to br and up.
func ensureTap(u *undo, ip *network.InterfacePlan, br netlink.Link, owner *tapOwner) error {
	tap, err := ensureLink(u, ip, ip.TapName, func() error { return createTap(ip.TapName, ip.Queues > 1, owner) })
	if err != nil {
		return err
	}
	if ip.MTU > 0 && tap.Attrs().MTU != ip.MTU {
		if err := netlink.LinkSetMTU(tap, ip.MTU); err != nil {
			return setupErr(ip.Interface, "set MTU of tap "+ip.TapName, err)
		}
	}
	if tap.Attrs().MasterIndex != br.Attrs().Index {
		if err := netlink.LinkSetMaster(tap, br); err != nil {
			return setupErr(ip.Interface, "enslave tap "+ip.TapName+" to "+ip.Bridge, err)
		}
	}
	if err := netlink.LinkSetUp(tap); err != nil {
		return setupErr(ip.Interface, "set tap "+ip.TapName+" up", err)
	}
	return nil
}

// ensureLink returns the link called name, creating it with create and
// marking it when missing. An existing link without virtkit's mark for this
// interface is an ErrForeignObject.
func ensureLink(u *undo, ip *network.InterfacePlan, name string, create func() error) (netlink.Link, error) {
	alias := aliasPrefix + ip.Interface
	l, err := netlink.LinkByName(name)
	if err == nil {
		if l.Attrs().Alias != alias {
			return nil, setupErr(ip.Interface, "link "+name, fmt.Errorf("%w: it exists without the mark %q", network.ErrForeignObject, alias))
		}
		return l, nil
	}
	if !isNotFound(err) {
		return nil, setupErr(ip.Interface, "link "+name, err)
	}
	if err := create(); err != nil {
		return nil, setupErr(ip.Interface, "create link "+name, err)
	}
	u.push(func() error { return deleteLink(name) })
	l, err = netlink.LinkByName(name)
	if err != nil {
		return nil, setupErr(ip.Interface, "link "+name, err)
	}
	if err := netlink.LinkSetAlias(l, alias); err != nil {
		return nil, setupErr(ip.Interface, "mark link "+name, err)
	}
	return l, nil
}

func ensureAddr(u *undo, iface string, l netlink.Link, cidr string) error {
	addr, err := netlink.ParseAddr(cidr)
	if err != nil {
		return setupErr(iface, "address "+cidr, err)
	}
	if addr.IP.To4() == nil {
		// Usable at once, not after duplicate address detection: the
		// guest's link is the bridge's alone.
		addr.Flags = unix.IFA_F_NODAD
	}
	err = netlink.AddrAdd(l, addr)
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	if err != nil {
		return setupErr(iface, "add address "+cidr+" to "+l.Attrs().Name, err)
	}
	u.push(func() error { return netlink.AddrDel(l, addr) })
	return nil
}

// createTap makes a persistent tap as KubeVirt does (no packet information,
// virtio-net headers; multi-queue when asked: QEMU must open it with the
// same choice), owned by owner when set, and closes it: QEMU opens it by
// name.
func createTap(name string, multiQueue bool, owner *tapOwner) error {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return err
	}
	flags := uint16(unix.IFF_TAP | unix.IFF_NO_PI | unix.IFF_VNET_HDR)
	if multiQueue {
		flags |= unix.IFF_MULTI_QUEUE
	}
	ifr.SetUint16(flags)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		return fmt.Errorf("TUNSETIFF: %w", err)
	}
	if owner != nil {
		if err := unix.IoctlSetInt(fd, unix.TUNSETOWNER, owner.uid); err != nil {
			return fmt.Errorf("TUNSETOWNER %d: %w", owner.uid, err)
		}
		if err := unix.IoctlSetInt(fd, unix.TUNSETGROUP, owner.gid); err != nil {
			return fmt.Errorf("TUNSETGROUP %d: %w", owner.gid, err)
		}
	}
	if err := unix.IoctlSetInt(fd, unix.TUNSETPERSIST, 1); err != nil {
		return fmt.Errorf("TUNSETPERSIST: %w", err)
	}
	return nil
}

const (
	ipForward   = "/proc/sys/net/ipv4/ip_forward"
	ipv6Forward = "/proc/sys/net/ipv6/conf/all/forwarding"
)

// enableForwarding turns on IPv4 or IPv6 forwarding (file) in the namespace
// (the calling thread's: /proc/sys/net follows it). Teardown leaves it on:
// another interface may need it, and it is a setting, not an object.
func enableForwarding(u *undo, file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if len(b) > 0 && b[0] == '1' {
		return nil
	}
	if err := os.WriteFile(file, []byte("1\n"), 0o644); err != nil {
		return err
	}
	u.push(func() error { return os.WriteFile(file, []byte("0\n"), 0o644) })
	return nil
}

func deleteLink(name string) error {
	l, err := netlink.LinkByName(name)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return netlink.LinkDel(l)
}

func isNotFound(err error) bool {
	var nf netlink.LinkNotFoundError
	return errors.As(err, &nf)
}

func ignoreExists(err error) error {
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	return err
}
