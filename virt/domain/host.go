package domain

import (
	"github.com/virtkit/virtkit/virt/network"
	"github.com/virtkit/virtkit/virt/storage"
)

// Host is what Convert needs to know about the machine and the launcher pod
// the VMI runs in. Everything here was decided elsewhere (by the handler, by
// virt/storage and virt/network, by the launcher); Convert only reads it, so
// the same VMI and the same Host always give the same domain.
//
// The zero value is a usable amd64 KVM host with KubeVirt's launcher paths;
// only Storage and Network must be filled for a VMI that has disks or NICs.
type Host struct {
	// Arch is the host architecture in Go's spelling ("amd64", "arm64",
	// "s390x", "ppc64le"); empty means amd64.
	Arch string `json:"arch,omitempty"`
	// Emulation selects software emulation (domain type "qemu", QEMU's TCG)
	// instead of hardware acceleration (domain type "kvm"), as KubeVirt's
	// useEmulation does. It is decided by configuration, never by probing
	// /dev/kvm here.
	Emulation bool `json:"emulation,omitempty"`
	// CPU holds the facts CPU placement needs.
	CPU HostCPU `json:"cpu,omitempty"`
	// HugepageSizes lists the hugepage sizes the pod can use, as Kubernetes
	// quantities ("2Mi", "1Gi"). Empty means unknown: any size is accepted.
	HugepageSizes []string `json:"hugepageSizes,omitempty"`
	// HostDevices maps the name of a VMI host device or GPU
	// (spec.domain.devices.hostDevices[].name, gpus[].name) to the PCI address
	// of the host device assigned to it ("0000:81:00.1").
	HostDevices map[string]string `json:"hostDevices,omitempty"`
	// VSOCKCID is the guest's vsock context ID when autoattachVSOCK is set;
	// virt-controller assigns it uniquely per node. WithVSOCKCID overrides it.
	VSOCKCID uint32 `json:"vsockCID,omitempty"`
	// Storage is virt/storage's plan, one entry per VMI volume that is a disk.
	Storage storage.Plan `json:"storage,omitempty"`
	// Network is virt/network's plan, one entry per VMI interface.
	Network network.Plan `json:"network,omitempty"`
	// Paths are the files and sockets the launcher chose.
	Paths Paths `json:"paths,omitempty"`
}

// HostCPU describes the CPUs of the launcher pod.
type HostCPU struct {
	// DefaultModel is the guest CPU model used when spec.domain.cpu.model is
	// empty (KubeVirt's cluster-wide default). Empty means "host-model", as in
	// KubeVirt.
	DefaultModel string `json:"defaultModel,omitempty"`
	// DedicatedCPUs are the host CPUs exclusively assigned to the pod (the
	// kubelet's static CPU manager cpuset), in the order they should be used.
	// dedicatedCpuPlacement pins vCPU i to them; isolateEmulatorThread and
	// IO threads take the ones left over.
	DedicatedCPUs []int `json:"dedicatedCPUs,omitempty"`
	// NUMACells is the host NUMA topology. Pinning keeps a guest core's
	// threads inside one cell, and guestMappingPassthrough mirrors the cells
	// the pinned CPUs belong to. Empty means a single cell holding every CPU.
	NUMACells []NUMACell `json:"numaCells,omitempty"`
}

// NUMACell is one host NUMA node.
type NUMACell struct {
	ID   int   `json:"id"`
	CPUs []int `json:"cpus"`
}

// Paths are launcher-chosen locations. Each empty field takes the default
// named in its comment, which is KubeVirt's layout, so clients that look for
// KubeVirt's sockets find them; <uid> is the VMI's metadata.uid.
type Paths struct {
	// SerialConsole is the unix socket of the serial console.
	// Default /var/run/kubevirt-private/<uid>/virt-serial0.
	SerialConsole string `json:"serialConsole,omitempty"`
	// SerialConsoleLog is the file QEMU copies console output to.
	// Default <SerialConsole>-log. Set NoSerialConsoleLog to write none.
	SerialConsoleLog string `json:"serialConsoleLog,omitempty"`
	// NoSerialConsoleLog turns the console log off when the VMI leaves
	// spec.domain.devices.logSerialConsole unset (KubeVirt's cluster switch).
	NoSerialConsoleLog bool `json:"noSerialConsoleLog,omitempty"`
	// VNC is the unix socket of the VNC server.
	// Default /var/run/kubevirt-private/<uid>/virt-vnc.
	VNC string `json:"vnc,omitempty"`
	// GuestAgent is the unix socket of the qemu-guest-agent channel. Empty
	// leaves the path to libvirt, which puts it in its channel directory.
	GuestAgent string `json:"guestAgent,omitempty"`
	// VirtiofsDir is the directory holding one virtiofsd socket per
	// filesystem, named <name>.sock.
	// Default /var/run/kubevirt/virtiofs-containers.
	VirtiofsDir string `json:"virtiofsDir,omitempty"`
	// KernelBootDir is where the kernel-boot container's kernel and initrd
	// are visible to QEMU; each keeps its base name.
	// Default /var/run/kubevirt-ephemeral-disks/kernel-boot.
	KernelBootDir string `json:"kernelBootDir,omitempty"`
	// NVRAMDir holds the per-VMI EFI variable store, <name>_VARS.fd.
	// Default /var/run/kubevirt-private/libvirt/qemu/nvram.
	NVRAMDir string `json:"nvramDir,omitempty"`
	// PRHelper is the socket of the persistent-reservation helper used by
	// LUNs with reservation: true. There is no default: a LUN asking for
	// reservations on a host without a helper is an error.
	PRHelper string `json:"prHelper,omitempty"`
	// Firmware holds the OVMF images for EFI guests.
	Firmware FirmwarePaths `json:"firmware,omitempty"`
}

// FirmwarePaths are the EFI firmware images (code and variable template)
// installed on the host or in the launcher image. Defaults are Debian's
// ovmf package (/usr/share/OVMF).
type FirmwarePaths struct {
	// EFICode defaults to /usr/share/OVMF/OVMF_CODE_4M.fd.
	EFICode string `json:"efiCode,omitempty"`
	// EFIVars defaults to /usr/share/OVMF/OVMF_VARS_4M.fd.
	EFIVars string `json:"efiVars,omitempty"`
	// SecureBootCode defaults to /usr/share/OVMF/OVMF_CODE_4M.secboot.fd.
	SecureBootCode string `json:"secureBootCode,omitempty"`
	// SecureBootVars (with Microsoft's keys enrolled) defaults to
	// /usr/share/OVMF/OVMF_VARS_4M.ms.fd.
	SecureBootVars string `json:"secureBootVars,omitempty"`
}

const (
	defaultPrivateDir     = "/var/run/kubevirt-private/"
	defaultVirtiofsDir    = "/var/run/kubevirt/virtiofs-containers"
	defaultKernelBootDir  = "/var/run/kubevirt-ephemeral-disks/kernel-boot"
	defaultNVRAMDir       = "/var/run/kubevirt-private/libvirt/qemu/nvram"
	defaultEFICode        = "/usr/share/OVMF/OVMF_CODE_4M.fd"
	defaultEFIVars        = "/usr/share/OVMF/OVMF_VARS_4M.fd"
	defaultSecureBootCode = "/usr/share/OVMF/OVMF_CODE_4M.secboot.fd"
	defaultSecureBootVars = "/usr/share/OVMF/OVMF_VARS_4M.ms.fd"
)

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
