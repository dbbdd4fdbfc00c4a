package handler

import (
	"net/netip"
	"slices"

	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/guestagent"
)

// The infoSource values of a VMI's status.interfaces, as KubeVirt's handler
// writes them: where an entry's data came from.
const (
	InfoSourceDomain      = "domain"
	InfoSourceGuestAgent  = "guest-agent"
	InfoSourceDomainAndGA = InfoSourceDomain + ", " + InfoSourceGuestAgent
)

// maxGuestOnlyInterfaces caps the NICs the agent reports that the domain
// does not have (bonds, VLANs, bridges in the guest), as KubeVirt does.
const maxGuestOnlyInterfaces = 10

// mergeGuestInterfaces adds the agent's view to the domain's interfaces
// (ifaces, from the plan), as KubeVirt's handler does: a NIC the agent
// knows by its MAC gets the guest's name for it and infoSource "domain,
// guest-agent", and per address family the guest's addresses when the
// status has none of that family, or none when the guest has none of it
// (a guest without an address cannot be reached at one); a masquerade
// NIC's link-local addresses are left out (the pod cannot reach them).
// The agent's other NICs follow, at most maxGuestOnlyInterfaces, with
// infoSource "guest-agent" and no name.
func mergeGuestInterfaces(ifaces []virtv1.VirtualMachineInstanceNetworkInterface, guest []guestagent.Interface, spec []virtv1.Interface) []virtv1.VirtualMachineInstanceNetworkInterface {
	masquerade := map[string]bool{}
	for _, s := range spec {
		masquerade[s.Name] = s.Masquerade != nil
	}
	guestOnly := 0
	for _, g := range guest {
		i := slices.IndexFunc(ifaces, func(s virtv1.VirtualMachineInstanceNetworkInterface) bool {
			return g.MAC != "" && s.MAC == g.MAC
		})
		if i < 0 {
			if guestOnly == maxGuestOnlyInterfaces {
				continue
			}
			guestOnly++
			s := virtv1.VirtualMachineInstanceNetworkInterface{MAC: g.MAC, InterfaceName: g.Name, InfoSource: InfoSourceGuestAgent}
			setIPs(&s, slices.Clone(g.IPs))
			ifaces = append(ifaces, s)
			continue
		}
		s := &ifaces[i]
		s.InterfaceName, s.InfoSource = g.Name, InfoSourceDomainAndGA
		guestIPs := g.IPs
		if masquerade[s.Name] {
			guestIPs = slices.DeleteFunc(slices.Clone(guestIPs), linkLocal)
		}
		v4, v6 := byFamily(s.IPs)
		gv4, gv6 := byFamily(guestIPs)
		if len(v4) == 0 || len(gv4) == 0 {
			v4 = gv4
		}
		if len(v6) == 0 || len(gv6) == 0 {
			v6 = gv6
		}
		setIPs(s, append(v4, v6...))
	}
	return ifaces
}

// carryGuestInterfaces keeps what the agent added to prev while the agent
// has not been asked yet (a restarted handler): the guest's names and
// addresses of the domain's NICs, and the guest's other NICs.
func carryGuestInterfaces(ifaces, prev []virtv1.VirtualMachineInstanceNetworkInterface) []virtv1.VirtualMachineInstanceNetworkInterface {
	for _, p := range prev {
		if p.InfoSource == InfoSourceGuestAgent {
			ifaces = append(ifaces, *p.DeepCopy())
			continue
		}
		for i := range ifaces {
			if p.MAC != "" && p.MAC == ifaces[i].MAC && p.InfoSource == InfoSourceDomainAndGA {
				ifaces[i].InterfaceName, ifaces[i].InfoSource = p.InterfaceName, p.InfoSource
				setIPs(&ifaces[i], slices.Clone(p.IPs))
			}
		}
	}
	return ifaces
}

// setIPs sets s's addresses and its first as IP.
func setIPs(s *virtv1.VirtualMachineInstanceNetworkInterface, ips []string) {
	s.IP, s.IPs = "", nil
	if len(ips) > 0 {
		s.IP, s.IPs = ips[0], ips
	}
}

// byFamily splits addresses into IPv4 and IPv6, dropping what is neither.
func byFamily(ips []string) (v4, v6 []string) {
	for _, s := range ips {
		a, err := netip.ParseAddr(s)
		switch {
		case err != nil:
		case a.Unmap().Is4():
			v4 = append(v4, s)
		default:
			v6 = append(v6, s)
		}
	}
	return v4, v6
}

func linkLocal(s string) bool {
	a, err := netip.ParseAddr(s)
	return err != nil || a.IsLinkLocalUnicast()
}
