// Package network plans how a pod's interfaces become guest NICs (bridge and
// masquerade bindings, pure) and performs that plan inside a pod's network
// namespace (netlink, nftables, DHCP), with a teardown that removes exactly
// what setup created.
//
// It must not import virt/domain (which consumes its plans) or anything above.
//
// Status: the plan types (plan.go) are here for virt/domain; the planner and
// setup arrive with issue 5.
package network
