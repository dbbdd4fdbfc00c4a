// Package netns performs virt/network's plans inside a pod's network
// namespace, on Linux: [Open] a namespace by path, [NetNS.Discover] its
// interfaces (the planner's input), [NetNS.Setup] the taps, bridges,
// addresses and nftables NAT a plan needs, serve the guest DHCPv4 and, for a
// dual-stack masquerade guest, router advertisements ([NetNS.StartDHCP]),
// and [NetNS.Teardown] exactly what setup made. NetNS implements
// network.Configurator; network.Fake is its in-memory twin.
//
// It must not touch network namespaces it is not given, nor links, tables or
// addresses it did not make: links it makes carry the alias
// "virtkit:<interface>", nftables tables are named "virtkit-<interface>".
// Setup and Teardown with a kept plan are safe to repeat.
//
// Everything that touches the kernel is in _linux.go files; the packet
// encoders (DHCP messages, router advertisements) are plain Go.
package netns
