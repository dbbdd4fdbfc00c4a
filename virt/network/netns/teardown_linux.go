package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"

	"github.com/virtkit/virtkit/virt/network"
)

// Teardown removes what Setup made for plan: the nftables tables (ip, and
// ip6 for a dual-stack guest), the tap
// and the bridge (only links that carry virtkit's mark), and gives a bridge
// binding's pod interface back its MAC, IPv4 addresses and routes. What is
// already gone is skipped, so Teardown can be repeated. It goes on after a
// failed step and returns every failure.
func (n *NetNS) Teardown(ctx context.Context, plan network.Plan) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("network: teardown: %w", err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	var errs []error
	err := n.do(func() error {
		for _, name := range plan.Names() {
			ip := plan[name]
			if ip.Binding == network.BindingMasquerade {
				if err := deleteNAT(n.handle, &ip); err != nil {
					errs = append(errs, setupErr(name, "nftables table "+natTable(&ip), err))
				}
			}
			if err := deleteOurLink(&ip, ip.TapName); err != nil {
				errs = append(errs, err)
			}
			if ip.Binding == network.BindingBridge {
				if err := releasePod(&ip); err != nil {
					errs = append(errs, err)
				}
			}
			if err := deleteOurLink(&ip, ip.Bridge); err != nil {
				errs = append(errs, err)
			}
			n.log.V(1).Info("interface torn down", "interface", name, "netns", n.path)
		}
		return nil
	})
	return errors.Join(append(errs, err)...)
}

// deleteOurLink deletes the link called name if it carries the interface's mark.
func deleteOurLink(ip *network.InterfacePlan, name string) error {
	if name == "" {
		return nil
	}
	l, err := netlink.LinkByName(name)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return setupErr(ip.Interface, "link "+name, err)
	}
	if l.Attrs().Alias != aliasPrefix+ip.Interface {
		return nil // not ours: leave it
	}
	if err := netlink.LinkDel(l); err != nil {
		return setupErr(ip.Interface, "delete link "+name, err)
	}
	return nil
}

// releasePod gives a bridge binding's pod interface back its state.
func releasePod(ip *network.InterfacePlan) error {
	pod, err := netlink.LinkByName(ip.Pod.Name)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return setupErr(ip.Interface, "pod interface "+ip.Pod.Name, err)
	}
	var errs []error
	if br, err := netlink.LinkByName(ip.Bridge); err == nil && pod.Attrs().MasterIndex == br.Attrs().Index {
		if err := netlink.LinkSetNoMaster(pod); err != nil {
			errs = append(errs, setupErr(ip.Interface, "release "+ip.Pod.Name+" from "+ip.Bridge, err))
		}
	}
	orig, err := net.ParseMAC(ip.Pod.MAC)
	if err == nil && pod.Attrs().HardwareAddr.String() == ip.PodPortMAC && ip.PodPortMAC != orig.String() {
		if err := netlink.LinkSetDown(pod); err != nil {
			errs = append(errs, setupErr(ip.Interface, "set "+ip.Pod.Name+" down", err))
		}
		if err := netlink.LinkSetHardwareAddr(pod, orig); err != nil {
			errs = append(errs, setupErr(ip.Interface, "restore MAC of "+ip.Pod.Name, err))
		}
	}
	if err := netlink.LinkSetUp(pod); err != nil {
		errs = append(errs, setupErr(ip.Interface, "set "+ip.Pod.Name+" up", err))
	}
	for _, s := range network.IPv4s(ip.Pod.IPs) {
		addr, err := netlink.ParseAddr(s)
		if err == nil {
			err = ignoreExists(netlink.AddrAdd(pod, addr))
		}
		if err != nil {
			errs = append(errs, setupErr(ip.Interface, "restore address "+s+" on "+ip.Pod.Name, err))
		}
	}
	if err := restoreRoutes(ip, pod); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// restoreRoutes puts the pod interface's IPv4 routes with a next hop back
// (removing its addresses removed them).
func restoreRoutes(ip *network.InterfacePlan, pod netlink.Link) error {
	var errs []error
	for _, r := range ip.Pod.Routes {
		dst, err := netip.ParsePrefix(r.Dst)
		gw, gerr := netip.ParseAddr(r.Gateway)
		if err != nil || gerr != nil || !dst.Addr().Is4() {
			continue
		}
		route := &netlink.Route{LinkIndex: pod.Attrs().Index, Gw: net.IP(gw.AsSlice())}
		if dst.Bits() > 0 {
			route.Dst = &net.IPNet{IP: net.IP(dst.Addr().AsSlice()), Mask: net.CIDRMask(dst.Bits(), 32)}
		}
		if err := netlink.RouteReplace(route); err != nil {
			errs = append(errs, setupErr(ip.Interface, "restore route "+r.Dst+" via "+r.Gateway, err))
		}
	}
	return errors.Join(errs...)
}
