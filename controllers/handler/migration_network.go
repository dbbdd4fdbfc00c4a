package handler

import (
	"fmt"
	"net"
)

// MigrationNetworkAddress is the address a handler takes migrations on
// when its pod is on KubeVirt's dedicated migration network
// (migrations.network): the first global unicast address of the pod's
// interface name, migration0 (virtv1.MigrationInterfaceName) where
// virt-operator's Multus annotation joins the pod to that network. ok is
// false when the pod has no such interface: migrations use the pod
// network. An interface of that name without such an address is an
// error, as in KubeVirt: the network is half there.
//
// It reads the interfaces of the calling thread's network namespace.
func MigrationNetworkAddress(name string) (ip net.IP, ok bool, err error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, false, fmt.Errorf("migration network: list interfaces: %w", err)
	}
	for _, iface := range ifaces {
		if iface.Name != name {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			return nil, false, fmt.Errorf("migration network: interface %s: %w", name, err)
		}
		if ip := globalUnicast(addrs); ip != nil {
			return ip, true, nil
		}
		return nil, false, fmt.Errorf("migration network: interface %s has no global unicast address (addresses %v)", name, addrs)
	}
	return nil, false, nil
}

// globalUnicast is the first global unicast address of addrs, nil for
// none: a link-local address is only good on one link.
func globalUnicast(addrs []net.Addr) net.IP {
	for _, a := range addrs {
		var ip net.IP
		switch a := a.(type) {
		case *net.IPNet:
			ip = a.IP
		case *net.IPAddr:
			ip = a.IP
		}
		if ip.IsGlobalUnicast() {
			return ip
		}
	}
	return nil
}
