package netns_test

import (
	"context"
	"fmt"

	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/network"
	"github.com/virtkit/virtkit/virt/network/netns"
)

// The node side: plan a VMI in a launcher pod's network namespace, set it
// up, serve DHCP while the guest runs, and tear it down. (Needs root and a
// pod namespace, so it has no checked output; the integration tests run it.)
func ExampleOpen() {
	ctx := context.Background()
	var vmi *virtv1.VirtualMachineInstance // defaulted by virt/spec
	ns, err := netns.Open("/proc/12345/ns/net")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ns.Close()
	pod, err := ns.Discover(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	plan, err := network.MakePlan(vmi, pod)
	if err != nil {
		fmt.Println(err) // field errors; nothing was touched
		return
	}
	// Save the plan (JSON) before Setup: Teardown needs it after a restart.
	if err := ns.Setup(ctx, plan); err != nil {
		fmt.Println(err)
		return
	}
	for _, ip := range plan {
		srv, err := ns.StartDHCP(ctx, ip)
		if err != nil {
			fmt.Println(err)
			continue
		}
		defer srv.Stop()
	}
	// ... convert with virt/domain (Host.Network = plan) and start the domain ...
	_ = ns.Teardown(ctx, plan)
}
