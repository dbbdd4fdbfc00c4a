package domain

import (
	"errors"
	"strconv"

	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// Convert builds the libvirt domain for vmi on host.
//
// vmi is expected to be defaulted already (virt/spec's DefaultVMI), but
// Convert reads every pointer defensively and treats an unset field as its
// KubeVirt default, so it never panics. Whatever cannot be converted (a disk
// whose volume has no storage plan, an unknown bus, a field virtkit does not
// implement) is returned as a *ConvertError naming the field. vmi and host
// are not modified.
func Convert(vmi *virtv1.VirtualMachineInstance, host Host, opts ...Option) (*libvirtxml.Domain, error) {
	if vmi == nil {
		return nil, convErr(ErrInvalidField, "vmi", "is nil")
	}
	c := newConverter(vmi, host, opts)
	if err := c.convert(); err != nil {
		return nil, err
	}
	return &c.dom, nil
}

func newConverter(vmi *virtv1.VirtualMachineInstance, host Host, opts []Option) *converter {
	c := &converter{vmi: vmi, spec: &vmi.Spec.Domain, h: host, opts: defaultOptions()}
	c.host = &c.h
	for _, o := range opts {
		if o != nil {
			o(&c.opts)
		}
	}
	return c
}

// converter carries the state shared by the per-concept steps; each step
// lives in its own file (firmware.go, convert_cpu.go, convert_disks.go, ...).
type converter struct {
	vmi  *virtv1.VirtualMachineInstance
	spec *virtv1.DomainSpec
	host *Host // &h
	h    Host
	opts options
	dom  libvirtxml.Domain
	dev  libvirtxml.DomainDeviceList
	p    domainParts

	arch        archInfo
	virtioModel string // "virtio-non-transitional", "virtio-transitional" or "virtio"
	efi         bool

	// CPU facts computed by convertCPU and used by IO threads and devices.
	vcpus       uint // vCPUs present at boot
	maxVCPUs    uint // vCPUs including hot-pluggable sockets
	dedicated   bool
	emulatorPin string
	freeCPUs    []int // dedicated CPUs not used by vCPUs or the emulator

	memoryBytes uint64 // guest memory at boot
	hugepages   bool
	pageBytes   uint64
	sharedMem   bool // virtiofs needs guest memory shared with virtiofsd

	usbNeeded  bool
	scsiNeeded bool
	ioThreads  ioThreadPlan
}

func (c *converter) convert() error {
	if err := c.convertArch(); err != nil {
		return err
	}
	c.dom.Type = "kvm"
	if c.host.Emulation {
		c.dom.Type = "qemu"
	}
	c.dom.Name = Name(c.vmi.Namespace, c.vmi.Name)
	c.dom.UUID = c.opts.uuid
	if c.dom.UUID == "" && c.spec.Firmware != nil {
		c.dom.UUID = string(c.spec.Firmware.UUID)
	}
	if err := c.rejectUnimplemented(); err != nil {
		return err
	}

	// The order matters only where a step reads what an earlier one
	// decided: CPU before memory (NUMA cells), memory before devices
	// (hugepages turn free page reporting off), disks before controllers.
	steps := [...]func() error{
		c.convertOS,
		c.convertCPU,
		c.convertMemory,
		c.convertFeatures,
		c.convertClock,
		c.convertDisks,
		c.convertInterfaces,
		c.convertDevices,
		c.convertControllers,
		c.convertIOThreadPins,
		c.convertNUMAPassthrough,
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	if c.spec.RebootPolicy != nil && *c.spec.RebootPolicy == virtv1.RebootPolicyTerminate {
		// A guest reboot ends the VMI; the VM controller decides what next.
		c.dom.OnReboot = "destroy"
	}
	c.dom.Devices = &c.dev
	return nil
}

// rejectUnimplemented reports KubeVirt fields virtkit does not convert yet,
// so a manifest relying on them fails loudly instead of booting without them.
func (c *converter) rejectUnimplemented() error {
	s := c.spec
	d := &s.Devices
	switch {
	case s.LaunchSecurity != nil:
		return convErr(ErrNotImplemented, pathDomain+".launchSecurity", "confidential computing (SEV, SNP, TDX) is not implemented")
	case s.CPU != nil && s.CPU.Realtime != nil:
		return convErr(ErrNotImplemented, pathCPU+".realtime", "realtime vCPU scheduling is not implemented")
	case d.ClientPassthrough != nil:
		return convErr(ErrNotImplemented, pathDevices+".clientPassthrough", "USB client passthrough is not implemented")
	case d.DownwardMetrics != nil:
		return convErr(ErrNotImplemented, pathDevices+".downwardMetrics", "downward metrics are not implemented")
	case s.Firmware != nil && s.Firmware.ACPI != nil:
		return convErr(ErrNotImplemented, pathFirmware+".acpi", "ACPI SLIC/MSDM tables are not implemented")
	}
	for i := range d.GPUs {
		if d.GPUs[i].VirtualGPUOptions != nil {
			return convErr(ErrNotImplemented, indexed(pathDevices+".gpus", i)+".virtualGPUOptions", "vGPU display options are not implemented")
		}
	}
	return nil
}

// archInfo holds what differs between architectures.
type archInfo struct {
	goarch  string
	libvirt string // libvirt's architecture name
	machine string // default machine type
}

func (c *converter) convertArch() error {
	goarch := c.host.Arch
	if goarch == "" {
		goarch = "amd64"
	}
	if a := c.vmi.Spec.Architecture; a != "" && a != goarch {
		return convErr(ErrMissingHostFact, "spec.architecture", "is "+strconv.Quote(a)+" but the host is "+goarch)
	}
	switch goarch {
	case "amd64":
		c.arch = archInfo{goarch, "x86_64", "q35"}
	case "arm64":
		c.arch = archInfo{goarch, "aarch64", "virt"}
	case "s390x":
		c.arch = archInfo{goarch, "s390x", "s390-ccw-virtio"}
	case "ppc64le":
		c.arch = archInfo{goarch, "ppc64le", "pseries"}
	default:
		return convErr(ErrInvalidField, "host.arch", "unknown architecture "+strconv.Quote(goarch))
	}
	// KubeVirt writes the virtio 1.0-only models unless the VMI asks for
	// transitional devices (for old guests such as RHEL 6); s390x has only
	// plain virtio.
	switch {
	case goarch == "s390x":
		c.virtioModel = "virtio"
	case c.spec.Devices.UseVirtioTransitional != nil && *c.spec.Devices.UseVirtioTransitional:
		c.virtioModel = "virtio-transitional"
	default:
		c.virtioModel = "virtio-non-transitional"
	}
	return nil
}

// privatePath is a file in KubeVirt's per-VMI launcher directory,
// /var/run/kubevirt-private/<uid>; a VMI without a UID (one built in Go, not
// read from the API server) uses its domain name instead.
func (c *converter) privatePath(file string) string {
	if c.vmi.UID != "" {
		return defaultPrivateDir + string(c.vmi.UID) + file
	}
	return defaultPrivateDir + c.dom.Name + file
}

// alias is the user alias KubeVirt gives a device named in the VMI: libvirt
// keeps aliases starting with "ua-" as given, so the handler can map a
// device back to its VMI name.
func alias(name string) *libvirtxml.DomainAlias {
	return &libvirtxml.DomainAlias{Name: "ua-" + name}
}

// zero is a shared index or port 0.
func (c *converter) zero() *uint { return &c.p.zero }

// pciAddress returns the guest address for a device: the spec's own
// address first, then one pinned with WithPCIAddresses.
func (c *converter) pciAddress(field, specAddr, aliasName string) (*libvirtxml.DomainAddress, error) {
	addr := specAddr
	if addr == "" && c.opts.pciAddresses != nil {
		addr = c.opts.pciAddresses[aliasName]
	}
	if addr == "" {
		return nil, nil
	}
	pci, err := parsePCIAddress(addr)
	if err != nil {
		return nil, convErr(ErrInvalidField, field, err.Error())
	}
	return &libvirtxml.DomainAddress{PCI: pci}, nil
}

var errPCIAddress = errors.New("want a PCI address like 0000:81:01.0")

// parsePCIAddress reads "dddd:bb:ss.f" (hex domain, bus, slot; function 0-7).
func parsePCIAddress(s string) (*libvirtxml.DomainAddressPCI, error) {
	if len(s) != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.' {
		return nil, errPCIAddress
	}
	dom, err1 := strconv.ParseUint(s[0:4], 16, 16)
	bus, err2 := strconv.ParseUint(s[5:7], 16, 8)
	slot, err3 := strconv.ParseUint(s[8:10], 16, 8)
	fn, err4 := strconv.ParseUint(s[11:12], 16, 8)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || slot > 0x1f || fn > 7 {
		return nil, errPCIAddress
	}
	a := [4]uint{uint(dom), uint(bus), uint(slot), uint(fn)}
	return &libvirtxml.DomainAddressPCI{Domain: &a[0], Bus: &a[1], Slot: &a[2], Function: &a[3]}, nil
}

// enabled reads a KubeVirt *bool whose unset value means def.
func enabled(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// featureOn reads a KubeVirt FeatureState: present and not explicitly
// disabled means on (the API's defaulting sets Enabled to true).
func featureOn(f *virtv1.FeatureState) bool {
	return f != nil && (f.Enabled == nil || *f.Enabled)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func uintPtr(v uint) *uint { return &v }
