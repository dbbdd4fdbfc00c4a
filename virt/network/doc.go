// Package network plans how a pod's interfaces become guest NICs (bridge and
// masquerade bindings). It is pure and builds on every GOOS: the plan types,
// the planner, the preview, the errors, the Configurator interface that
// performs a plan, and an in-memory Configurator (Fake). The Linux effects,
// setup and teardown inside a pod's network namespace (netlink, nftables,
// the DHCPv4 server, router advertisements), are virt/network/netns.
//
// The flow, as virt-handler runs it for one VMI:
//
//	ns, _ := netns.Open("/proc/PID/ns/net")      // the launcher pod's namespace (virt/network/netns)
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
// (plan.go), the plan check every Configurator runs first (Plan.Check), the
// Configurator and DHCPServer interfaces, and Fake for callers' tests. Must
// not import virt/domain (which consumes its plans) or anything above it, nor
// any Linux-only package.
//
// IPv6: masquerade is dual stack when the pod interface has an IPv6 address;
// unlike KubeVirt (fd10:0:2::2/120 by DHCPv6) the guest takes its address in
// fd10:0:2::/64 by SLAAC from router advertisements (ipv6.go here, and the
// sender in virt/network/netns).
// Not done yet: IPv6-only pods, IPv6 for the bridge binding, DHCPv6, binding
// plugins, SR-IOV and passt.
package network
