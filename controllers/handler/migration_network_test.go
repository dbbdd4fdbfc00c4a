package handler_test

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/virtkit/virtkit/controllers/handler"
	"github.com/virtkit/virtkit/internal/testenv"
)

// In a pod's network namespace that Multus joined to the migration network
// (an interface named migration0 with an address), the handler finds that
// address; without the link it finds none; with the link but no global
// address it refuses.
func TestMigrationNetworkAddress(t *testing.T) {
	testenv.Integration(t)
	name := testenv.NamePrefix() + "mignet" + strconv.Itoa(os.Getpid()%1000)
	var ns netns.NsHandle
	inNS(t, nil, func() {
		h, err := netns.NewNamed(name)
		if err != nil {
			t.Fatalf("create netns %s: %v", name, err)
		}
		ns = h
	})
	t.Cleanup(func() {
		ns.Close()
		if err := netns.DeleteNamed(name); err != nil {
			t.Errorf("delete netns %s: %v", name, err)
		}
	})
	nl, err := netlink.NewHandleAt(ns)
	must(t, err)
	defer nl.Close()
	// Links as a CNI plugin makes them: one end of a veth pair (its peer
	// stays in the namespace too; nothing crosses it).
	addLink := func(ifname string, cidrs ...string) {
		t.Helper()
		la := netlink.NewLinkAttrs()
		la.Name = ifname
		must(t, nl.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: ifname + "p"}))
		l, err := nl.LinkByName(ifname)
		must(t, err)
		for _, c := range cidrs {
			a, err := netlink.ParseAddr(c)
			must(t, err)
			must(t, nl.AddrAdd(l, a))
		}
		must(t, nl.LinkSetUp(l))
	}

	lookup := func(ifname string) (ip net.IP, ok bool, err error) {
		inNS(t, &ns, func() { ip, ok, err = handler.MigrationNetworkAddress(ifname) })
		return ip, ok, err
	}
	if ip, ok, err := lookup("migration0"); ip != nil || ok || err != nil {
		t.Errorf("no migration0: %v %t %v, want the pod network", ip, ok, err)
	}
	addLink("migration0", "169.254.9.9/16", "192.0.2.10/24")
	if ip, ok, err := lookup("migration0"); !ok || err != nil || ip.String() != "192.0.2.10" {
		t.Errorf("migration0 with 192.0.2.10/24: %v %t %v", ip, ok, err)
	}
	addLink("bare0", "169.254.9.10/16")
	if _, ok, err := lookup("bare0"); ok || err == nil || !strings.Contains(err.Error(), "interface bare0 has no global unicast address") {
		t.Errorf("an interface without a global address: ok %t, %v", ok, err)
	}
}
