package netns_test

import "github.com/virtkit/virtkit/virt/network/networktest"

// The planner's VMI builders, shared with virt/network's tests.
var (
	vmiWith    = networktest.VMIWith
	masq       = networktest.Masquerade
	bridge     = networktest.Bridge
	podNetwork = networktest.PodNetwork
	multus     = networktest.Multus
)
