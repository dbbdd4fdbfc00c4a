package spec

import (
	"fmt"
	"net"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	virtv1 "kubevirt.io/api/core/v1"
)

// interfaceModels are the NIC models KubeVirt accepts.
func interfaceModels() []string {
	return []string{"e1000", "e1000e", "igb", "ne2k_pci", "pcnet", "rtl8139", virtv1.VirtIO}
}

// masqueradeReservedMAC is the MAC of the gateway side of masquerade's
// bridge; a guest using it would collide with its own gateway.
const masqueradeReservedMAC = "02:00:00:00:00:00"

// validateNetworking checks interfaces, networks and their pairing.
func validateNetworking(p *field.Path, s *virtv1.VirtualMachineInstanceSpec) field.ErrorList {
	var errs field.ErrorList
	np := p.Child("networks")
	ip := p.Child("domain", "devices", "interfaces")

	networks := make(map[string]*virtv1.Network, len(s.Networks))
	podNetworks := 0
	for i := range s.Networks {
		n := &s.Networks[i]
		switch {
		case n.Name == "":
			errs = append(errs, field.Required(np.Index(i).Child("name"), "network name is required"))
		case networks[n.Name] != nil:
			errs = append(errs, field.Duplicate(np.Index(i).Child("name"), n.Name))
		default:
			networks[n.Name] = n
		}
		switch {
		case n.Pod != nil && n.Multus != nil:
			errs = append(errs, field.Invalid(np.Index(i), n.Name, "must have exactly one of pod, multus"))
		case n.Pod == nil && n.Multus == nil:
			errs = append(errs, field.Required(np.Index(i).Child("pod"), "a network source (pod) is required"))
		case n.Pod != nil:
			podNetworks++
			if podNetworks > 1 {
				errs = append(errs, field.Forbidden(np.Index(i).Child("pod"), "only one pod network is allowed"))
			}
			errs = append(errs, validatePodCIDRs(np.Index(i).Child("pod"), n.Pod)...)
		}
	}

	ifaces := make(map[string]bool, len(s.Domain.Devices.Interfaces))
	macs := map[string]bool{}
	portNames := map[string]bool{}
	for i := range s.Domain.Devices.Interfaces {
		iface := &s.Domain.Devices.Interfaces[i]
		fp := ip.Index(i)
		switch {
		case iface.Name == "":
			errs = append(errs, field.Required(fp.Child("name"), "interface name is required"))
		case ifaces[iface.Name]:
			errs = append(errs, field.Duplicate(fp.Child("name"), iface.Name))
		case !allChars(iface.Name, func(c byte) bool { return isAlnum(c) || c == '-' || c == '_' }):
			errs = append(errs, field.Invalid(fp.Child("name"), iface.Name,
				"may contain only alphanumeric characters, dashes (-) and underscores (_)"))
		}
		ifaces[iface.Name] = true
		net := networks[iface.Name]
		if net == nil && iface.Name != "" {
			errs = append(errs, field.NotFound(fp.Child("name"), iface.Name))
		}
		errs = append(errs, validateBinding(fp, iface, net)...)
		errs = append(errs, validateNIC(fp, iface, macs)...)
		errs = append(errs, validatePorts(fp.Child("ports"), iface, portNames)...)
	}
	for i := range s.Networks {
		if n := s.Networks[i].Name; n != "" && !ifaces[n] {
			errs = append(errs, field.Invalid(np.Index(i).Child("name"), n, "no interface uses this network"))
		}
	}
	return errs
}

// validateBinding checks the interface has exactly one binding and that the
// network can carry it: masquerade and bridge ride the pod network.
func validateBinding(fp *field.Path, iface *virtv1.Interface, net *virtv1.Network) field.ErrorList {
	b := iface.InterfaceBindingMethod
	var set []string
	for _, x := range []struct {
		name string
		on   bool
	}{
		{"bridge", b.Bridge != nil}, {"masquerade", b.Masquerade != nil}, {"sriov", b.SRIOV != nil},
		{"slirp", b.DeprecatedSlirp != nil}, {"macvtap", b.DeprecatedMacvtap != nil}, {"passt", b.DeprecatedPasst != nil},
		{"passtBinding", b.PasstBinding != nil}, {"binding", iface.Binding != nil},
	} {
		if x.on {
			set = append(set, x.name)
		}
	}
	if len(set) > 1 {
		return field.ErrorList{field.Invalid(fp, strings.Join(set, ","), "must have exactly one binding method")}
	}
	if len(set) == 0 {
		return field.ErrorList{field.Required(fp.Child("masquerade"), "a binding method (masquerade or bridge) is required")}
	}
	var errs field.ErrorList
	if b.Masquerade != nil && net != nil && net.Pod == nil {
		errs = append(errs, field.Invalid(fp.Child("masquerade"), "{}", "masquerade binding is only allowed on the pod network"))
	}
	if b.Masquerade != nil && strings.EqualFold(iface.MacAddress, masqueradeReservedMAC) {
		errs = append(errs, field.Invalid(fp.Child("macAddress"), iface.MacAddress, "is reserved for the masquerade gateway"))
	}
	switch iface.State {
	case "", virtv1.InterfaceStateLinkUp, virtv1.InterfaceStateLinkDown:
	case virtv1.InterfaceStateAbsent:
		if net != nil && net.Pod != nil {
			errs = append(errs, field.Invalid(fp.Child("state"), iface.State, "the pod network interface cannot be absent"))
		}
	default:
		errs = append(errs, field.NotSupported(fp.Child("state"), iface.State, []string{"up", "down", "absent"}))
	}
	return errs
}

// validateNIC checks model, MAC, PCI address, boot order and DHCP options.
func validateNIC(fp *field.Path, iface *virtv1.Interface, macs map[string]bool) field.ErrorList {
	var errs field.ErrorList
	if iface.Model != "" && !contains(interfaceModels(), iface.Model) {
		errs = append(errs, field.NotSupported(fp.Child("model"), iface.Model, interfaceModels()))
	}
	if iface.MacAddress != "" {
		mac, err := net.ParseMAC(iface.MacAddress)
		switch {
		case err != nil || len(mac) != 6:
			errs = append(errs, field.Invalid(fp.Child("macAddress"), iface.MacAddress, "must be a 48-bit MAC address such as de:ad:00:00:be:af"))
		case mac[0]&1 == 1:
			errs = append(errs, field.Invalid(fp.Child("macAddress"), iface.MacAddress, "must be a unicast address (the least significant bit of the first octet must be 0)"))
		case macs[mac.String()]:
			errs = append(errs, field.Duplicate(fp.Child("macAddress"), iface.MacAddress))
		default:
			macs[mac.String()] = true
		}
	}
	if iface.PciAddress != "" && !pciAddressOK(iface.PciAddress) {
		errs = append(errs, field.Invalid(fp.Child("pciAddress"), iface.PciAddress, "must be a PCI address of the form dddd:bb:ss.f"))
	}
	if iface.BootOrder != nil && *iface.BootOrder < 1 {
		errs = append(errs, field.Invalid(fp.Child("bootOrder"), *iface.BootOrder, "must be greater than 0"))
	}
	if iface.ACPIIndex < 0 {
		errs = append(errs, field.Invalid(fp.Child("acpiIndex"), iface.ACPIIndex, "must be greater than or equal to 0"))
	}
	if d := iface.DHCPOptions; d != nil {
		for j, o := range d.PrivateOptions {
			// RFC 2132 leaves 224-254 for site-specific (private) options.
			if o.Option < 224 || o.Option > 254 {
				errs = append(errs, field.Invalid(fp.Child("dhcpOptions", "privateOptions").Index(j).Child("option"), o.Option,
					"must be a private DHCP option, 224 to 254"))
			}
		}
		for j, ntp := range d.NTPServers {
			if ip := net.ParseIP(ntp); ip == nil || ip.To4() == nil {
				errs = append(errs, field.Invalid(fp.Child("dhcpOptions", "ntpServers").Index(j), ntp, "must be an IPv4 address"))
			}
		}
	}
	return errs
}

// validatePorts checks forwarded ports: numbers 1-65535, TCP or UDP, and
// names unique across all interfaces (they name launcher pod ports).
func validatePorts(pp *field.Path, iface *virtv1.Interface, names map[string]bool) field.ErrorList {
	var errs field.ErrorList
	for j, port := range iface.Ports {
		jp := pp.Index(j)
		if port.Port < 1 || port.Port > 65535 {
			errs = append(errs, field.Invalid(jp.Child("port"), port.Port, "must be between 1 and 65535"))
		}
		switch port.Protocol {
		case "", "TCP", "UDP":
		default:
			errs = append(errs, field.NotSupported(jp.Child("protocol"), port.Protocol, []string{"TCP", "UDP"}))
		}
		if port.Name != "" {
			if names[port.Name] {
				errs = append(errs, field.Duplicate(jp.Child("name"), port.Name))
			}
			names[port.Name] = true
		}
	}
	return errs
}

// validatePodCIDRs checks masquerade's guest-side networks parse.
func validatePodCIDRs(pp *field.Path, pod *virtv1.PodNetwork) field.ErrorList {
	var errs field.ErrorList
	if c := pod.VMNetworkCIDR; c != "" {
		if ip, _, err := net.ParseCIDR(c); err != nil || ip.To4() == nil {
			errs = append(errs, field.Invalid(pp.Child("vmNetworkCIDR"), c, "must be an IPv4 CIDR such as 10.0.2.0/24"))
		}
	}
	if c := pod.VMIPv6NetworkCIDR; c != "" {
		if ip, _, err := net.ParseCIDR(c); err != nil || ip.To4() != nil {
			errs = append(errs, field.Invalid(pp.Child("vmIPv6NetworkCIDR"), c, fmt.Sprintf("must be an IPv6 CIDR such as %s", "fd10:0:2::/120")))
		}
	}
	return errs
}
