package netns

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/virtkit/virtkit/virt/network"
)

// natTable is the nftables table (family ip, and ip6 for a dual-stack
// guest) that holds one masquerade
// interface's rules; Teardown deletes it whole.
func natTable(ip *network.InterfacePlan) string { return "virtkit-" + ip.Interface }

func nftConn(h vnetns.NsHandle) (*nftables.Conn, error) {
	c, err := nftables.New(nftables.WithNetNSFd(int(h)))
	if err != nil {
		return nil, fmt.Errorf("nftables: %w", err)
	}
	return c, nil
}

func hasTable(c *nftables.Conn, family nftables.TableFamily, name string) (bool, error) {
	tables, err := c.ListTablesOfFamily(family)
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

// natFamily is what differs between the IPv4 and the IPv6 rules.
type natFamily struct {
	table  nftables.TableFamily
	proto  uint32 // NFPROTO_IPV4 or NFPROTO_IPV6
	srcOff uint32 // offset of the source address in the network header
	dstOff uint32
	alen   uint32
	guest  string // the guest's address (CIDR)
	pod    []string
}

// natFamilies are the families ip's rules are written for: IPv4, and IPv6
// when the plan gives the guest an IPv6 address (dual stack).
func natFamilies(ip *network.InterfacePlan) []natFamily {
	out := []natFamily{{table: nftables.TableFamilyIPv4, proto: unix.NFPROTO_IPV4, srcOff: 12, dstOff: 16, alen: 4,
		pod: network.IPv4s(ip.Pod.IPs)}}
	if g := network.IPv4s(ip.GuestIPs); len(g) > 0 {
		out[0].guest = g[0]
	}
	if g := network.IPv6s(ip.GuestIPs); len(g) > 0 {
		out = append(out, natFamily{table: nftables.TableFamilyIPv6, proto: unix.NFPROTO_IPV6, srcOff: 8, dstOff: 24, alen: 16,
			guest: g[0], pod: network.IPv6s(ip.Pod.IPs)})
	}
	return out
}

// ensureNAT writes, in one atomic batch per family (a table of family ip,
// and one of family ip6 for a dual-stack guest), the masquerade rules of ip
// as KubeVirt's masquerade binding does:
//
//	prerouting  (dstnat):  iifname POD ip daddr POD-IP [l4proto P th dport N] dnat to GUEST
//	output      (dstnat):  ip daddr POD-IP l4proto P th dport N dnat to GUEST   (only listed ports)
//	postrouting (srcnat):  ip saddr GUEST oifname POD masquerade
//
// (ip6 daddr / saddr for IPv6.) With no ports every connection to the pod's
// address goes to the guest. A table that exists already was written whole
// by an earlier Setup: kept.
func ensureNAT(u *undo, h vnetns.NsHandle, ip *network.InterfacePlan) error {
	for _, f := range natFamilies(ip) {
		if err := ensureNATFamily(u, h, ip, f); err != nil {
			return err
		}
	}
	return nil
}

func ensureNATFamily(u *undo, h vnetns.NsHandle, ip *network.InterfacePlan, f natFamily) error {
	name := natTable(ip)
	c, err := nftConn(h)
	if err != nil {
		return setupErr(ip.Interface, "nftables table "+name, err)
	}
	exists, err := hasTable(c, f.table, name)
	if err != nil {
		return setupErr(ip.Interface, "nftables table "+name, err)
	}
	if exists {
		return nil
	}
	guest, err := netip.ParsePrefix(f.guest)
	if err != nil {
		return setupErr(ip.Interface, "guest address", err)
	}
	t := c.AddTable(&nftables.Table{Family: f.table, Name: name})
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
			&expr.NAT{Type: expr.NATTypeDestNAT, Family: f.proto, RegAddrMin: 1},
		}
	}
	for _, s := range f.pod {
		podIP, err := netip.ParsePrefix(s)
		if err != nil {
			return setupErr(ip.Interface, "pod address "+s, err)
		}
		toPod := matchAddr(f.dstOff, f.alen, podIP.Addr())
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
		matchAddr(f.srcOff, f.alen, guest.Addr()),
		matchIfname(expr.MetaKeyOIFNAME, ip.Pod.Name),
		[]expr.Any{&expr.Counter{}, &expr.Masq{}},
	)})
	if err := c.Flush(); err != nil {
		return setupErr(ip.Interface, "write nftables table "+name, err)
	}
	u.push(func() error { return deleteNATFamily(h, ip, f.table) })
	return nil
}

// deleteNAT deletes the interface's tables (ip and ip6) that exist.
func deleteNAT(h vnetns.NsHandle, ip *network.InterfacePlan) error {
	return errors.Join(deleteNATFamily(h, ip, nftables.TableFamilyIPv4), deleteNATFamily(h, ip, nftables.TableFamilyIPv6))
}

func deleteNATFamily(h vnetns.NsHandle, ip *network.InterfacePlan, family nftables.TableFamily) error {
	c, err := nftConn(h)
	if err != nil {
		return err
	}
	exists, err := hasTable(c, family, natTable(ip))
	if err != nil || !exists {
		return err
	}
	c.DelTable(&nftables.Table{Family: family, Name: natTable(ip)})
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

// matchAddr matches the network header's address of length alen at offset:
// IPv4 source 12, destination 16 (4 bytes); IPv6 source 8, destination 24 (16).
func matchAddr(offset, alen uint32, a netip.Addr) []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: alen},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: a.AsSlice()},
	}
}

// matchPort matches the layer 4 protocol and destination port.
func matchPort(p network.Port) []expr.Any {
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
