// Package networktest is the contract suite of virt/network's
// Configurator: one sequence of steps that every implementation must pass,
// run against the fake (network.Fake) and a real pod network namespace
// (virt/network/netns).
//
// An implementation's test calls Run with a function that returns a
// Target: the Configurator plus a way to read what the namespace holds. The
// suite discovers the pod's interfaces, plans a masquerade VMI on them,
// sets it up twice (the second time changes nothing), serves DHCP, tears
// it down (leaving the namespace as it was) and feeds bad plans that must
// fail with network.ErrInvalidPlan naming the interface, touching nothing.
//
// It builds with CGO_ENABLED=0 and needs no privileges itself; a Target on
// a real namespace does.
package networktest
