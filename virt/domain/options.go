package domain

// Option changes how Convert builds a domain.
type Option func(*options)

type options struct {
	uuid         string
	pciAddresses map[string]string
	smbios       SMBIOS
	statsPeriod  uint
	memorySlots  uint
	vsockCID     uint32
}

// SMBIOS is the system information the guest sees (dmidecode -t system).
// KubeVirt takes it from its cluster configuration; the defaults are KubeVirt's.
type SMBIOS struct {
	Manufacturer string // default "KubeVirt"
	Product      string // default "None"
	Family       string // default "KubeVirt"
	Version      string
	SKU          string
}

func defaultOptions() options {
	return options{
		smbios:      SMBIOS{Manufacturer: "KubeVirt", Product: "None", Family: "KubeVirt"},
		statsPeriod: 10,
		memorySlots: 1,
	}
}

// WithUUID sets the domain UUID, overriding spec.domain.firmware.uuid. A
// migration target uses it to keep the source's UUID.
func WithUUID(uuid string) Option {
	return func(o *options) { o.uuid = uuid }
}

// WithPCIAddresses pins guest PCI addresses of devices, keyed by device
// alias ("ua-" + the VMI device name: "ua-rootdisk", "ua-default"), as
// "0000:00:03.0". An address in the VMI spec (disks[].disk.pciAddress,
// interfaces[].pciAddress) wins. Use it to keep addresses stable across a
// restart or a migration; devices not named keep libvirt's assignment.
func WithPCIAddresses(byAlias map[string]string) Option {
	return func(o *options) { o.pciAddresses = byAlias }
}

// WithSMBIOS sets the SMBIOS system entries (KubeVirt's cluster SMBIOS
// configuration). Empty fields are left out.
func WithSMBIOS(s SMBIOS) Option {
	return func(o *options) { o.smbios = s }
}

// WithMemBalloonStatsPeriod sets how often, in seconds, the balloon reports
// guest memory statistics; 0 turns the reports off. The default is 10, as in
// KubeVirt.
func WithMemBalloonStatsPeriod(seconds uint) Option {
	return func(o *options) { o.statsPeriod = seconds }
}

// WithMemorySlots sets the maxMemory slot count written for memory hotplug
// (spec.domain.memory.maxGuest). Hotplug uses a virtio-mem device, which needs
// no slot, but libvirt 9.0 requires the attribute; the default is 1.
func WithMemorySlots(n uint) Option {
	return func(o *options) { o.memorySlots = n }
}

// WithVSOCKCID sets the vsock context ID, overriding Host.VSOCKCID.
func WithVSOCKCID(cid uint32) Option {
	return func(o *options) { o.vsockCID = cid }
}
