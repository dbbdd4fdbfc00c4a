package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	"gotest.tools/v3/assert"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/local/node"
)

// fakeHost is a machine's links as networks sees them.
type fakeHost struct {
	bridges map[string]string // name -> gateway CIDR
	other   []string          // networks of other links
}

func (h *fakeHost) networks(dataDir string) *networks {
	return &networks{dataDir: dataDir,
		used: func(except string) ([]*net.IPNet, error) {
			var out []*net.IPNet
			for _, c := range h.other {
				_, n, _ := net.ParseCIDR(c)
				out = append(out, n)
			}
			for name, gw := range h.bridges {
				if name != except {
					_, n, _ := net.ParseCIDR(gw)
					out = append(out, n)
				}
			}
			return out, nil
		},
		ensureBridge: func(name string, gw *net.IPNet) error {
			h.bridges[name] = gw.String()
			return nil
		},
	}
}

func TestAssignNetworks(t *testing.T) {
	h := &fakeHost{bridges: map[string]string{}, other: []string{"10.88.0.0/17", "192.168.1.0/24"}}
	dir := t.TempDir()
	nets := h.networks(dir)
	a, err := nets.assign("a", 0)
	assert.NilError(t, err)
	b, err := nets.assign("b", 1)
	assert.NilError(t, err)
	t.Logf("a: %+v, b: %+v", a, b)
	assert.Assert(t, a.Bridge != b.Bridge && a.PodCIDR != b.PodCIDR, "%+v %+v", a, b)
	for _, n := range []NodeNetwork{a, b} {
		assert.Assert(t, len(n.Bridge) <= 15 && strings.HasPrefix(n.Bridge, "vkl-"), n.Bridge)
		assert.Assert(t, !overlaps(n.PodCIDR, mustNets(h.other...)), "%s overlaps a host network", n.PodCIDR)
		assert.Assert(t, strings.HasPrefix(n.PodCIDR, "10.88.") && strings.HasSuffix(n.PodCIDR, ".0/24"), n.PodCIDR)
		ip, _, _ := net.ParseCIDR(n.PodCIDR)
		assert.Equal(t, h.bridges[n.Bridge], nextIP(ip).String()+"/24", "the bridge holds the gateway")
	}

	// The same data directory keeps its assignment, even with nodes
	// started in another order.
	again := h.networks(dir)
	b2, err := again.assign("b", 0)
	assert.NilError(t, err)
	assert.DeepEqual(t, b2, b)

	// Another cluster's nodes get other bridges and other ranges.
	other := h.networks(t.TempDir())
	c, err := other.assign("a", 0)
	assert.NilError(t, err)
	assert.Assert(t, c.Bridge != a.Bridge && c.PodCIDR != a.PodCIDR && c.PodCIDR != b.PodCIDR, "%+v", c)

	// A kept range that something else took meanwhile is given up for a free one.
	delete(h.bridges, a.Bridge)
	h.other = append(h.other, a.PodCIDR)
	a2, err := h.networks(dir).assign("a", 0)
	assert.NilError(t, err)
	assert.Equal(t, a2.Bridge, a.Bridge)
	assert.Assert(t, a2.PodCIDR != a.PodCIDR && a2.PodCIDR != b.PodCIDR && a2.PodCIDR != c.PodCIDR, "%+v", a2)
}

func TestAssignNetworksFull(t *testing.T) {
	h := &fakeHost{bridges: map[string]string{}, other: []string{"10.0.0.0/8"}}
	_, err := h.networks(t.TempDir()).assign("a", 0)
	assert.ErrorContains(t, err, "cluster: node a: network: every /24 of 10.88.0.0/16 is taken")
}

func mustNets(cidrs ...string) []*net.IPNet {
	var out []*net.IPNet
	for _, c := range cidrs {
		_, n, _ := net.ParseCIDR(c)
		out = append(out, n)
	}
	return out
}

// Two nodes' networks on this machine, with a pod on each connected by
// the CNI plugins as a local node connects it: a pod of one node reaches a
// pod of the other at its address.
func TestNodeNetworksRoute(t *testing.T) {
	testenv.Integration(t)
	dir := testenv.Dir(t)
	nets := newNetworks(dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type pod struct {
		cni *node.CNI
		pn  node.PodNetwork
		att node.Attachment
	}
	var pods []pod
	for i, name := range []string{"a", "b"} {
		nn, err := nets.assign(name, i)
		assert.NilError(t, err)
		cni := &node.CNI{BinDir: testenv.CNIPlugins(t), Network: testenv.NamePrefix() + name, Bridge: nn.Bridge,
			Subnet: nn.PodCIDR, DataDir: filepath.Join(dir, name, "cni")}
		t.Cleanup(func() { assert.Check(t, cni.Close()) })
		pn := node.PodNetwork{ID: fmt.Sprintf("%s-pod-%d", testenv.NamePrefix(), i), Namespace: "default", Name: "pod-" + name,
			Dir: filepath.Join(dir, name)}
		assert.NilError(t, os.MkdirAll(pn.Dir, 0o755))
		att, err := cni.Setup(ctx, pn)
		assert.NilError(t, err)
		t.Cleanup(func() { assert.Check(t, cni.Teardown(context.Background(), pn)) })
		t.Logf("node %s: bridge %s, pods %s, pod address %v", name, nn.Bridge, nn.PodCIDR, att.IPs)
		pods = append(pods, pod{cni, pn, att})
	}

	// A server in b's pod, a client in a's.
	var ln net.Listener
	assert.NilError(t, inNetNS(pods[1].att.NetNS, func() (err error) {
		ln, err = net.Listen("tcp", pods[1].att.IPs[0]+":0")
		return err
	}))
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = io.WriteString(c, "hello from b\n")
			c.Close()
		}
	}()
	var got []byte
	err := inNetNS(pods[0].att.NetNS, func() error {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		got, err = io.ReadAll(c)
		return err
	})
	assert.NilError(t, err, "pod of node a at %v dialing pod of node b at %s", pods[0].att.IPs, ln.Addr())
	assert.Equal(t, string(got), "hello from b\n")
}

// inNetNS runs f on a thread in the network namespace at path.
func inNetNS(path string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		ns, err := netns.GetFromPath(path)
		if err != nil {
			errc <- err
			return
		}
		defer ns.Close()
		if err := netns.Set(ns); err != nil {
			errc <- fmt.Errorf("entering %s: %w", path, err)
			return
		}
		err = f()
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread() // else the thread dies with the goroutine
		}
		errc <- err
	}()
	return <-errc
}
