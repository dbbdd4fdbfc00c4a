package contract

// The launcher's host CPU probe, KubeVirt's node labeller: run as
// `virt-launcher --probe-host-cpu DIR --virt-type kvm|qemu|auto` (an init
// container of the handler's pod), it starts a private libvirtd, asks it
// what a guest's CPU can be on this node, and writes the answers into DIR,
// where the handler reads them to label its node (virt/nodelabels).
const (
	// FlagProbeHostCPU names the folder the probe writes into.
	FlagProbeHostCPU = "probe-host-cpu"
	// FlagVirtType is the domain type the probe asks about: VirtTypeKVM,
	// VirtTypeQEMU (software emulation), or VirtTypeAuto.
	FlagVirtType = "virt-type"
	VirtTypeKVM  = "kvm"
	VirtTypeQEMU = "qemu"
	// VirtTypeAuto asks about KVM where /dev/kvm exists and about
	// emulation elsewhere; a node whose KVM must not be used passes
	// VirtTypeQEMU instead, since only its presence is looked at.
	VirtTypeAuto = "auto"
	// HostCPUCapsFile is libvirt's domain capabilities
	// (`virsh domcapabilities`).
	HostCPUCapsFile = "domcapabilities.xml"
	// HostCPUBaselineFile is the host-model CPU with every feature listed
	// (`virsh hypervisor-cpu-baseline --features`); absent when the
	// host-model mode is not supported.
	HostCPUBaselineFile = "host-cpu-baseline.xml"
)
