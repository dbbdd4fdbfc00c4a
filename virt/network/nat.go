package network

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// natTable is the nftables table (family ip) that holds one masquerade
// interface's rules; Teardown deletes it whole.
func natTable(ip *InterfacePlan) string { return "virtkit-" + ip.Interface }

func nftConn(h netns.NsHandle) (*nftables.Conn, error) {
	c, err := nftables.New(nftables.WithNetNSFd(int(h)))
	if err != nil {
		return nil, fmt.Errorf("nftables: %w", err)
	}
	return c, nil
}

func hasTable(c *nftables.Conn, name string) (bool, error) {
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return false, fmt.Errorf("list nftables tables: %w", err)
	}
	for _, t := range tables {
		if t.Name == name {
			return true, nil
		}
	}
	return false, nil
}

// ensureNAT writes, in one atomic batch, the masquerade rules of ip (as
// KubeVirt's masquerade binding does, IPv4):
//
//	prerouting  (dstnat):  iifname POD ip daddr POD-IP [l4proto P th dport N] dnat to GUEST
//	output      (dstnat):  ip daddr POD-IP l4proto P th dport N dnat to GUEST   (only listed ports)
//	postrouting (srcnat):  ip saddr GUEST oifname POD masquerade
//
// With no ports every connection to the pod's address goes to the guest.
// A table that exists already was written whole by an earlier Setup: kept.
func ensureNAT(u *undo, h netns.NsHandle, ip *InterfacePlan) error {
	name := natTable(ip)
	c, err := nftConn(h)
	if err != nil {
		return setupErr(ip.Interface, "nftables table "+name, err)
	}
	exists, err := hasTable(c, name)
	if err != nil {
		return setupErr(ip.Interface, "nftables table "+name, err)
	}
	if exists {
		return nil
	}
	guest, err := netip.ParsePrefix(ipv4s(ip.GuestIPs)[0])
	if err != nil {
		return setupErr(ip.Interface, "guest address", err)
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: name})
	pre := c.AddChain(&nftables.Chain{Name: "prerouting", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityNATDest})
	out := c.AddChain(&nftables.Chain{Name: "output", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityNATDest})
	post := c.AddChain(&nftables.Chain{Name: "postrouting", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource})

	dnat := func() []expr.Any {
		return []expr.Any{
			&expr.Counter{},
			&expr.Immediate{Register: 1, Data: guest.Addr().AsSlice()},
			&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1},
		}
	}
	for _, s := range ipv4s(ip.Pod.IPs) {
		podIP, err := netip.ParsePrefix(s)
		if err != nil {
			return setupErr(ip.Interface, "pod address "+s, err)
		}
		toPod := matchIPv4(16, podIP.Addr())
		if len(ip.Ports) == 0 {
			c.AddRule(&nftables.Rule{Table: t, Chain: pre, Exprs: concat(matchIfname(expr.MetaKeyIIFNAME, ip.Pod.Name), toPod, dnat())})
			continue
		}
		for _, p := range ip.Ports {
			port := matchPort(p)
			c.AddRule(&nftables.Rule{Table: t, Chain: pre, Exprs: concat(matchIfname(expr.MetaKeyIIFNAME, ip.Pod.Name), toPod, port, dnat())})
			c.AddRule(&nftables.Rule{Table: t, Chain: out, Exprs: concat(toPod, port, dnat())})
		}
	}
	c.AddRule(&nftables.Rule{Table: t, Chain: post, Exprs: concat(
		matchIPv4(12, guest.Addr()),
		matchIfname(expr.MetaKeyOIFNAME, ip.Pod.Name),
		[]expr.Any{&expr.Counter{}, &expr.Masq{}},
	)})
	if err := c.Flush(); err != nil {
		return setupErr(ip.Interface, "write nftables table "+name, err)
	}
	u.push(func() error { return deleteNAT(h, ip) })
	return nil
}

// deleteNAT deletes the interface's table if it exists.
func deleteNAT(h netns.NsHandle, ip *InterfacePlan) error {
	c, err := nftConn(h)
	if err != nil {
		return err
	}
	exists, err := hasTable(c, natTable(ip))
	if err != nil || !exists {
		return err
	}
	c.DelTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: natTable(ip)})
	return c.Flush()
}

func concat(parts ...[]expr.Any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// matchIfname matches the input or output interface name.
func matchIfname(key expr.MetaKey, name string) []expr.Any {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, name)
	return []expr.Any{
		&expr.Meta{Key: key, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: b},
	}
}

// matchIPv4 matches the IPv4 header's source (offset 12) or destination (16).
func matchIPv4(offset uint32, a netip.Addr) []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: a.AsSlice()},
	}
}

// matchPort matches the layer 4 protocol and destination port.
func matchPort(p Port) []expr.Any {
	proto := byte(unix.IPPROTO_TCP)
	if p.Protocol == "UDP" {
		proto = unix.IPPROTO_UDP
	}
	port := binary.BigEndian.AppendUint16(nil, uint16(p.Port))
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: port},
	}
}
