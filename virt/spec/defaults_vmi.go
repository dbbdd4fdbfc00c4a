package spec

import (
	virtv1 "kubevirt.io/api/core/v1"
)

// DefaultVMI fills in what KubeVirt's VMI mutating webhook (and the API's
// generated defaulters) would, in place. It is idempotent: defaulting a
// defaulted VMI changes nothing. It never fails; what cannot be defaulted is
// left for ValidateVMI to report.
//
// In order (KubeVirt's order, since later steps read earlier results):
// architecture, machine type, resource requests, CPU topology, container disk
// pull policy, the default pod interface, a disk for every volume that has
// neither disk nor filesystem, the API's own defaulters (features.acpi,
// timers, cdrom readonly/tray, probes, inputs), Hyper-V feature dependencies,
// CPU model and architecture-specific firmware; then what KubeVirt leaves to
// its converter and virtkit writes into the spec so that it says what will
// run: disk and NIC buses/models, guest memory, firmware UUID, grace period;
// with WithLiveUpdate, the room to grow KubeVirt gives (maxSockets,
// maxGuest) after the guest memory it derives from.
func DefaultVMI(vmi *virtv1.VirtualMachineInstance, opts ...Option) {
	if vmi == nil {
		return
	}
	c := newConfig(opts)
	spec := &vmi.Spec
	defaultSpec(&c, spec)
	defaultFirmwareUUID(spec, vmi.Namespace, vmi.Name)
	apiDefaults(vmi)
	defaultHypervDependencies(spec)
	defaultArchSpecific(&c, spec)
	defaultDeviceModels(&c, spec)
	defaultGuestMemory(spec)
	defaultHotplugMaximums(&c, spec)
	if spec.TerminationGracePeriodSeconds == nil {
		g := c.gracePeriodSeconds
		spec.TerminationGracePeriodSeconds = &g
	}
}

// defaultSpec is KubeVirt's setDefaultVirtualMachineInstanceSpec.
func defaultSpec(c *config, spec *virtv1.VirtualMachineInstanceSpec) {
	if spec.Architecture == "" {
		spec.Architecture = c.arch
	}
	if spec.Domain.Machine == nil {
		spec.Domain.Machine = &virtv1.Machine{}
	}
	if spec.Domain.Machine.Type == "" {
		spec.Domain.Machine.Type = c.defaultMachineType(spec.Architecture)
	}
	defaultResourceRequests(c, spec)
	defaultCPUTopology(spec)
	defaultPullPolicies(spec)
	defaultPodInterface(spec)
	defaultVolumeDisks(spec)
}

// defaultFirmwareUUID gives the VMI its stable firmware UUID. A VMI without a
// name yet (generateName) keeps an empty UUID: deriving one from "" would
// give every such VMI the same identity.
func defaultFirmwareUUID(spec *virtv1.VirtualMachineInstanceSpec, namespace, name string) {
	if spec.Domain.Firmware != nil && spec.Domain.Firmware.UUID != "" {
		return
	}
	if name == "" {
		return
	}
	if spec.Domain.Firmware == nil {
		spec.Domain.Firmware = &virtv1.Firmware{}
	}
	spec.Domain.Firmware.UUID = FirmwareUUID(namespace, name)
}

// uuidPlaceholder shields an empty firmware UUID from the API's generated
// firmware defaulter, which would draw a random one: virtkit's UUIDs are
// derived (FirmwareUUID) or left empty until the VMI has a name.
const uuidPlaceholder = "virtkit-placeholder"

// apiDefaults runs the defaulters generated into kubevirt.io/api, the ones
// KubeVirt's webhook runs, so fields defaulted there (feature states, timers,
// cdrom readonly and tray, probe thresholds, input bus and type, an empty disk
// target becoming a disk) are defaulted here exactly as they are there,
// including for fields a future API version adds.
func apiDefaults(vmi *virtv1.VirtualMachineInstance) {
	if vmi.Spec.Domain.Firmware == nil {
		vmi.Spec.Domain.Firmware = &virtv1.Firmware{}
	}
	placeholder := vmi.Spec.Domain.Firmware.UUID == ""
	if placeholder {
		vmi.Spec.Domain.Firmware.UUID = uuidPlaceholder
	}
	virtv1.SetObjectDefaults_VirtualMachineInstance(vmi)
	if placeholder {
		vmi.Spec.Domain.Firmware.UUID = ""
	}
}

// defaultArchSpecific applies KubeVirt's per-architecture defaults.
func defaultArchSpecific(c *config, spec *virtv1.VirtualMachineInstanceSpec) {
	if spec.Domain.CPU == nil {
		spec.Domain.CPU = &virtv1.CPU{}
	}
	if spec.Domain.CPU.Model == "" {
		spec.Domain.CPU.Model = c.defaultCPUModel(spec.Architecture)
	}
	if spec.Architecture == ArchARM64 {
		// Arm64 machines boot only through UEFI; KubeVirt defaults the
		// bootloader to EFI without secure boot there.
		fw := spec.Domain.Firmware
		if fw.Bootloader == nil {
			f := false
			fw.Bootloader = &virtv1.Bootloader{EFI: &virtv1.EFI{SecureBoot: &f}}
		}
	}
}

func boolPtr(b bool) *bool { return &b }
