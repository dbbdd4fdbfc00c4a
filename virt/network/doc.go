// Package network plans how a pod's interfaces become guest NICs (bridge and
// masquerade bindings, pure) and performs that plan inside a pod's network
// namespace (netlink, nftables, DHCP), with a teardown that removes exactly
// what setup created.
//
// The flow, as virt-handler runs it for one VMI:
//
//	ns, _ := network.Open("/proc/PID/ns/net")    // the launcher pod's namespace
//	pod, _ := ns.Discover(ctx)                   // eth0, net1, ... with IPs, MAC, routes, MTU
//	plan, err := network.MakePlan(vmi, pod)       // pure; *FieldError values on bad input
//	err = ns.Setup(ctx, plan)                     // taps, bridges, addresses, nftables; idempotent
//	srv, _ := ns.StartDHCP(ctx, plan["default"])  // serves the guest until srv.Stop()
//	... virt/domain converts the VMI with plan, libvirt starts it ...
//	err = ns.Teardown(ctx, plan)
//
// Keep the plan (it is plain JSON): bridge binding moves the pod interface's
// addresses to the guest, so a restarted handler cannot discover them again;
// Setup and Teardown with the kept plan are safe to repeat.
//
// Owns: the planner (MakePlan), the plan types consumed by virt/domain
// (plan.go), setup and teardown in a namespace (NetNS), the DHCPv4 server and
// the router advertisement sender of a dual-stack masquerade guest, and Fake
// for callers' tests. Must not import virt/domain (which consumes its
// plans) or anything above it; must not touch network namespaces it is not
// given, nor links, tables or addresses it did not make (links it makes
// carry the alias "virtkit:<interface>", nftables tables are named
// "virtkit-<interface>").
//
// IPv6: masquerade is dual stack when the pod interface has an IPv6 address;
// unlike KubeVirt (fd10:0:2::2/120 by DHCPv6) the guest takes its address in
// fd10:0:2::/64 by SLAAC from router advertisements (ipv6.go, ra.go).
// Not done yet: IPv6-only pods, IPv6 for the bridge binding, DHCPv6, binding
// plugins, SR-IOV and passt.
package network
