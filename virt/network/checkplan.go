package network

import (
	"fmt"
	"net"
	"net/netip"
	"sort"
)

// maxLinkName is the kernel's limit on interface names (IFNAMSIZ - 1).
const maxLinkName = 15

// Check rejects a plan that a Configurator cannot perform, before anything
// is touched: every implementation calls it first, so the fake refuses what
// the real setup refuses. Its errors wrap ErrInvalidPlan.
func (plan Plan) Check() error {
	taps := map[string]string{}
	for _, name := range plan.Names() {
		ip := plan[name]
		bad := func(field, format string, args ...any) error {
			return fmt.Errorf("network: interface %q: %s: %s: %w", name, field, fmt.Sprintf(format, args...), ErrInvalidPlan)
		}
		if ip.Interface != name {
			return bad("interface", "plan key %q names interface %q", name, ip.Interface)
		}
		for field, v := range map[string]string{"tapName": ip.TapName, "bridge": ip.Bridge, "pod.name": ip.Pod.Name} {
			if v == "" || len(v) > maxLinkName {
				return bad(field, "%q is not a link name (1-%d characters)", v, maxLinkName)
			}
		}
		if other, dup := taps[ip.TapName]; dup {
			return bad("tapName", "%s is also the tap of interface %q", ip.TapName, other)
		}
		taps[ip.TapName] = name
		if _, err := net.ParseMAC(ip.MAC); err != nil {
			return bad("mac", "%q: %v", ip.MAC, err)
		}
		for _, s := range append(append([]string(nil), ip.GuestIPs...), ip.BridgeIPs...) {
			if _, err := netip.ParsePrefix(s); err != nil {
				return bad("guestIPs/bridgeIPs", "%q is not CIDR notation", s)
			}
		}
		for _, p := range ip.Ports {
			if (p.Protocol != "TCP" && p.Protocol != "UDP") || p.Port < 1 || p.Port > 65535 {
				return bad("ports", "%s %d is not a TCP or UDP port 1-65535", p.Protocol, p.Port)
			}
		}
		switch ip.Binding {
		case BindingMasquerade:
			if len(IPv4s(ip.GuestIPs)) == 0 || len(IPv4s(ip.BridgeIPs)) == 0 {
				return bad("guestIPs", "masquerade needs an IPv4 guest and gateway address")
			}
			if len(IPv4s(ip.Pod.IPs)) == 0 {
				return bad("pod.ips", "masquerade needs an IPv4 address on pod interface %s", ip.Pod.Name)
			}
		case BindingBridge:
			if _, err := net.ParseMAC(ip.PodPortMAC); err != nil {
				return bad("podPortMAC", "%q: %v", ip.PodPortMAC, err)
			}
			for _, s := range ip.Pod.IPs {
				if _, err := netip.ParsePrefix(s); err != nil {
					return bad("pod.ips", "%q is not CIDR notation", s)
				}
			}
		default:
			return bad("binding", "%q is not bridge or masquerade", ip.Binding)
		}
	}
	return nil
}

// Names are the plan's interface names, sorted: the order in which setup
// and teardown visit them.
func (plan Plan) Names() []string {
	names := make([]string, 0, len(plan))
	for n := range plan {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
