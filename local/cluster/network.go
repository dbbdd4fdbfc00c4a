package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// NodeNetwork is one local node's pod network: the host bridge its pods
// attach to and the IPv4 range they get addresses from (the first address
// is the bridge's, the pods' gateway). Pods of different local nodes reach
// each other through the host, which routes between the bridges.
type NodeNetwork struct {
	Bridge  string `json:"bridge"`
	PodCIDR string `json:"podCIDR"`
}

// Pod ranges are /24s of podRangePool, one per node; a cluster's nodes
// start at an offset derived from its data directory so that clusters of
// different data directories rarely even try the same range first.
const (
	podRangePool   = "10.88.0.0/16"
	podRangePrefix = 24
	// networksLock serializes the choice between virt-local processes of
	// this machine: a range counts as taken once a bridge holds its
	// gateway address, and the lock spans the check and the creation.
	networksLock = "/run/virtkit-local-networks.lock"
	networksFile = "networks.json"
)

// networks assigns the cluster's nodes their networks. A node keeps what it
// had (DataDir/networks.json) while that range is still free on this
// machine; otherwise, and for new nodes, it gets the first /24 of
// podRangePool that no host link holds an address in. Each node's bridge
// is created with its gateway address before the lock is let go, so that
// another virt-local starting meanwhile sees the range as taken. Bridge
// names are "vkl-", six hex digits of the data directory's hash and the
// node's index: distinct per cluster and per node.
type networks struct {
	dataDir string
	// used lists the IPv4 networks of addresses on host links other than
	// the named bridge (the host, other clusters); a test replaces it.
	used func(except string) ([]*net.IPNet, error)
	// ensureBridge makes the bridge exist, up, with the gateway address.
	ensureBridge func(name string, gateway *net.IPNet) error
}

func newNetworks(dataDir string) *networks {
	return &networks{dataDir: dataDir, used: hostNetworks, ensureBridge: ensureHostBridge}
}

func (n *networks) path() string { return filepath.Join(n.dataDir, networksFile) }

// assign returns the network of node, the index-th node of the cluster, and
// creates its bridge.
func (n *networks) assign(node string, index int) (NodeNetwork, error) {
	unlock, err := lockFile(networksLock)
	if err != nil {
		return NodeNetwork{}, fmt.Errorf("cluster: node %s: network: %w", node, err)
	}
	defer unlock()
	all, err := n.load()
	if err != nil {
		return NodeNetwork{}, err
	}
	sum := sha256.Sum256([]byte(n.dataDir))
	want := NodeNetwork{Bridge: fmt.Sprintf("vkl-%s%02x", hex.EncodeToString(sum[:3]), index&0xff)}
	if old, ok := all[node]; ok {
		want = old
	}
	used, err := n.used(want.Bridge)
	if err != nil {
		return NodeNetwork{}, fmt.Errorf("cluster: node %s: network: %w", node, err)
	}
	for other, nn := range all {
		if other == node {
			continue
		}
		if _, ipn, err := net.ParseCIDR(nn.PodCIDR); err == nil {
			used = append(used, ipn) // the cluster's other nodes, running or not
		}
	}
	if want.PodCIDR == "" || overlaps(want.PodCIDR, used) {
		cidr, err := freeRange(int(sum[3]), used)
		if err != nil {
			return NodeNetwork{}, fmt.Errorf("cluster: node %s: network: %w", node, err)
		}
		want.PodCIDR = cidr
	}
	ip, ipn, _ := net.ParseCIDR(want.PodCIDR)
	gw := &net.IPNet{IP: nextIP(ip.Mask(ipn.Mask)), Mask: ipn.Mask}
	if err := n.ensureBridge(want.Bridge, gw); err != nil {
		return NodeNetwork{}, fmt.Errorf("cluster: node %s: bridge %s for %s: %w", node, want.Bridge, want.PodCIDR, err)
	}
	all[node] = want
	if err := n.save(all); err != nil {
		return NodeNetwork{}, err
	}
	return want, nil
}

func (n *networks) load() (map[string]NodeNetwork, error) {
	all := map[string]NodeNetwork{}
	b, err := os.ReadFile(n.path())
	if errors.Is(err, fs.ErrNotExist) {
		return all, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &all)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: node networks in %s: %w", n.path(), err)
	}
	return all, nil
}

func (n *networks) save(all map[string]NodeNetwork) error {
	b, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(n.dataDir, 0o755); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	tmp := n.path() + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("cluster: node networks: %w", err)
	}
	if err := os.Rename(tmp, n.path()); err != nil {
		return fmt.Errorf("cluster: node networks: %w", err)
	}
	return nil
}

// freeRange returns the first /24 of podRangePool, counting from start,
// that overlaps none of used.
func freeRange(start int, used []*net.IPNet) (string, error) {
	_, pool, _ := net.ParseCIDR(podRangePool)
	ones, _ := pool.Mask.Size()
	count := 1 << (podRangePrefix - ones)
	for i := 0; i < count; i++ {
		n := (start + i) % count
		ip := pool.IP.To4()
		cidr := fmt.Sprintf("%d.%d.%d.0/%d", ip[0], ip[1], n, podRangePrefix)
		if !overlaps(cidr, used) {
			return cidr, nil
		}
	}
	return "", fmt.Errorf("every /%d of %s is taken on this machine", podRangePrefix, podRangePool)
}

func overlaps(cidr string, used []*net.IPNet) bool {
	_, a, err := net.ParseCIDR(cidr)
	if err != nil {
		return true
	}
	for _, b := range used {
		if a.Contains(b.IP) || b.Contains(a.IP) {
			return true
		}
	}
	return false
}

func nextIP(ip net.IP) net.IP {
	out := append(net.IP(nil), ip.To4()...)
	for i := len(out) - 1; i >= 0; i-- {
		out[i]++
		if out[i] != 0 {
			break
		}
	}
	return out
}

// hostNetworks lists the IPv4 networks of the addresses on this machine's
// links, except those of the link named except.
func hostNetworks(except string) ([]*net.IPNet, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("listing links: %w", err)
	}
	var out []*net.IPNet
	for _, l := range links {
		if l.Attrs().Name == except {
			continue
		}
		addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
		if err != nil {
			return nil, fmt.Errorf("addresses of %s: %w", l.Attrs().Name, err)
		}
		for _, a := range addrs {
			if a.IPNet != nil && !a.IP.IsLoopback() {
				out = append(out, &net.IPNet{IP: a.IP.Mask(a.Mask), Mask: a.Mask})
			}
		}
	}
	return out, nil
}

// ensureHostBridge makes a host bridge named name exist and be up, with
// gateway as its only IPv4 address (what the CNI bridge plugin expects of a
// gateway bridge it finds).
func ensureHostBridge(name string, gateway *net.IPNet) error {
	l, err := netlink.LinkByName(name)
	var nf netlink.LinkNotFoundError
	switch {
	case errors.As(err, &nf):
		attrs := netlink.NewLinkAttrs()
		attrs.Name = name
		if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: attrs}); err != nil {
			return fmt.Errorf("creating: %w", err)
		}
		if l, err = netlink.LinkByName(name); err != nil {
			return err
		}
	case err != nil:
		return err
	case l.Type() != "bridge":
		return fmt.Errorf("a link of type %s has that name", l.Type())
	}
	addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
	if err != nil {
		return err
	}
	have := false
	for _, a := range addrs {
		if a.IPNet.String() == gateway.String() {
			have = true
			continue
		}
		if err := netlink.AddrDel(l, &a); err != nil {
			return fmt.Errorf("removing the old address %s: %w", a.IPNet, err)
		}
	}
	if !have {
		if err := netlink.AddrAdd(l, &netlink.Addr{IPNet: gateway}); err != nil {
			return fmt.Errorf("adding %s: %w", gateway, err)
		}
	}
	return netlink.LinkSetUp(l)
}

// removeHostBridge deletes a bridge assign created for a node that then
// did not start.
func removeHostBridge(name string) error {
	l, err := netlink.LinkByName(name)
	var nf netlink.LinkNotFoundError
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil {
		return err
	}
	return netlink.LinkDel(l)
}

// lockFile takes an exclusive lock on path (created if missing) and
// returns its release.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}
