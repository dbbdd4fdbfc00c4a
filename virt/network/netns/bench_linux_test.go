package netns_test

import (
	"context"
	"testing"
	"time"

	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/network"
	"github.com/virtkit/virtkit/virt/network/netns"
	"github.com/virtkit/virtkit/virt/network/networktest"
)

// Setup time of one interface in a real pod namespace: links, addresses and
// (masquerade) the nftables table; Teardown is not timed. The goal is under
// 50 ms per interface.
func BenchmarkSetup(b *testing.B) {
	for _, bc := range []struct {
		name  string
		iface virtv1.Interface
	}{
		{"masquerade", networktest.Masquerade("default", virtv1.Port{Port: 80}, virtv1.Port{Port: 443})},
		{"bridge", networktest.Bridge("default")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := newPod(b)
			n, err := netns.Open(p.Path)
			must(b, err)
			defer n.Close()
			ctx := context.Background()
			found, err := n.Discover(ctx)
			must(b, err)
			plan, err := network.MakePlan(networktest.VMIWith([]virtv1.Interface{bc.iface}, []virtv1.Network{networktest.PodNetwork("default")}), found)
			must(b, err)
			var total time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if err := n.Setup(ctx, plan); err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
				b.StopTimer()
				if err := n.Teardown(ctx, plan); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/interface")
		})
	}
}
