// Package nodelabels computes the CPU labels KubeVirt's node labeller puts
// on a node, from what libvirt says about the CPUs a guest can have there:
// its domain capabilities and the host-model CPU with every feature
// expanded (virt/domain/libvirt's HostCPU; `virsh domcapabilities` and
// `virsh hypervisor-cpu-baseline --features`). VMIs that name a CPU model
// or feature are placed through these labels, as in KubeVirt:
//
//   - cpu-model.node.kubevirt.io/MODEL and
//     cpu-model-migration.node.kubevirt.io/MODEL for each usable named
//     model that is not obsolete;
//   - cpu-feature.node.kubevirt.io/FEATURE for each feature of the
//     host-model CPU that libvirt requires;
//   - host-model-cpu.node.kubevirt.io/MODEL, the host-model CPU's
//     required features (host-model-required-features.node.kubevirt.io/),
//     its vendor (cpu-vendor.node.kubevirt.io/), and
//     cpu-model-migration.node.kubevirt.io/ for it too unless it is
//     obsolete, in which case node-labeller.kubevirt.io/obsolete-host-model.
//
// It is pure: documents in, labels out, the same every time. [Owned] says
// which label keys it manages, so that a labeller replaces exactly those.
// It builds on every GOOS and needs no cgo.
package nodelabels
