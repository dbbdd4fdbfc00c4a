package spec

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	virtv1 "kubevirt.io/api/core/v1"
)

const (
	// maxSerialLen is KubeVirt's bound on disk and firmware serials.
	maxSerialLen = 256
	// Custom block sizes: powers of two from 512 B to 2 MiB, as QEMU takes.
	minBlockSize = 512
	maxBlockSize = 2 << 20
)

// serialOK accepts the characters libvirt takes in a serial: [A-Za-z0-9_.+-].
func serialOK(s string) bool {
	return s != "" && allChars(s, func(c byte) bool { return isAlnum(c) || c == '_' || c == '.' || c == '+' || c == '-' })
}

func allChars(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// validateDisks checks each disk on its own; rules that relate disks to
// volumes are in validateDiskVolumeMapping and validateBootOrder.
func validateDisks(p *field.Path, disks []virtv1.Disk) field.ErrorList {
	var errs field.ErrorList
	seen := make(map[string]int, len(disks))
	for i := range disks {
		d := &disks[i]
		dp := p.Index(i)
		switch {
		case d.Name == "":
			errs = append(errs, field.Required(dp.Child("name"), "disk name is required"))
		default:
			// The name can become a container name in the launcher pod.
			for _, msg := range validation.IsDNS1123Label(d.Name) {
				errs = append(errs, field.Invalid(dp.Child("name"), d.Name, msg))
			}
			if _, dup := seen[d.Name]; dup {
				errs = append(errs, field.Duplicate(dp.Child("name"), d.Name))
			}
			seen[d.Name] = i
		}
		errs = append(errs, validateDiskTarget(dp, d)...)
		if d.BootOrder != nil && *d.BootOrder < 1 {
			errs = append(errs, field.Invalid(dp.Child("bootOrder"), *d.BootOrder, "must be greater than 0"))
		}
		if d.Serial != "" {
			if len([]rune(d.Serial)) > maxSerialLen {
				errs = append(errs, field.TooLong(dp.Child("serial"), d.Serial, maxSerialLen))
			} else if !serialOK(d.Serial) {
				errs = append(errs, field.Invalid(dp.Child("serial"), d.Serial, "must be made up of the characters [A-Za-z0-9_.+-]"))
			}
		}
		errs = append(errs, validateDiskDriver(dp, d)...)
		errs = append(errs, validateBlockSize(dp.Child("blockSize"), d.BlockSize)...)
	}
	return errs
}

// effectiveBus is the bus a disk gets after DefaultVMI, so a rule gives the
// same answer before and after defaulting.
func effectiveBus(d *virtv1.Disk) (bus virtv1.DiskBus, kind string) {
	switch {
	case d.LUN != nil:
		bus, kind = d.LUN.Bus, "lun"
		if bus == "" {
			bus = virtv1.DiskBusSCSI
		}
	case d.CDRom != nil:
		bus, kind = d.CDRom.Bus, "cdrom"
		if bus == "" {
			bus = virtv1.DiskBusSATA
		}
	default:
		bus, kind = virtv1.DiskBusVirtio, "disk"
		if d.Disk != nil && d.Disk.Bus != "" {
			bus = d.Disk.Bus
		}
	}
	return bus, kind
}

func validateDiskTarget(dp *field.Path, d *virtv1.Disk) field.ErrorList {
	var errs field.ErrorList
	n := 0
	for _, set := range []bool{d.Disk != nil, d.LUN != nil, d.CDRom != nil} {
		if set {
			n++
		}
	}
	if n > 1 {
		return field.ErrorList{field.Invalid(dp, n, "must have exactly one of disk, lun, cdrom")}
	}
	bus, kind := effectiveBus(d)
	bp := dp.Child(kind, "bus")
	buses := []string{string(virtv1.DiskBusVirtio), string(virtv1.DiskBusSATA), string(virtv1.DiskBusSCSI), string(virtv1.DiskBusUSB)}
	switch {
	case !contains(buses, string(bus)):
		errs = append(errs, field.NotSupported(bp, bus, buses))
	case kind == "cdrom" && bus == virtv1.DiskBusVirtio:
		// q35 firmware cannot boot a virtio cdrom and libvirt refuses it.
		errs = append(errs, field.Invalid(bp, bus, "virtio is not a valid bus for a cdrom; use sata or scsi"))
	case kind == "lun" && bus != virtv1.DiskBusSCSI && bus != virtv1.DiskBusVirtio:
		// SCSI command passthrough needs a SCSI-speaking bus.
		errs = append(errs, field.Invalid(bp, bus, "a lun needs the scsi or virtio bus"))
	case kind == "disk" && bus == virtv1.DiskBusSATA && d.Disk != nil && d.Disk.ReadOnly:
		errs = append(errs, field.Invalid(dp.Child("disk", "readonly"), true, "sata hard disks do not support read-only"))
	}
	if d.Disk != nil && d.Disk.PciAddress != "" {
		ap := dp.Child("disk", "pciAddress")
		if bus != virtv1.DiskBusVirtio {
			errs = append(errs, field.Invalid(ap, d.Disk.PciAddress, "a PCI address can only be set on a virtio disk"))
		}
		if !pciAddressOK(d.Disk.PciAddress) {
			errs = append(errs, field.Invalid(ap, d.Disk.PciAddress, "must be a PCI address of the form dddd:bb:ss.f"))
		}
	}
	if d.CDRom != nil && d.CDRom.Tray != "" && d.CDRom.Tray != virtv1.TrayStateOpen && d.CDRom.Tray != virtv1.TrayStateClosed {
		errs = append(errs, field.NotSupported(dp.Child("cdrom", "tray"), d.CDRom.Tray, []string{"open", "closed"}))
	}
	if isTrue(d.DedicatedIOThread) && bus != virtv1.DiskBusVirtio {
		errs = append(errs, field.Invalid(dp.Child("dedicatedIOThread"), true,
			fmt.Sprintf("IO threads are only supported for virtio disks, not on the %s bus", bus)))
	}
	return errs
}

// validateDiskDriver checks cache, io and error policy values.
func validateDiskDriver(dp *field.Path, d *virtv1.Disk) field.ErrorList {
	var errs field.ErrorList
	switch d.Cache {
	case "", virtv1.CacheNone, virtv1.CacheWriteThrough, virtv1.CacheWriteBack:
	default:
		errs = append(errs, field.NotSupported(dp.Child("cache"), d.Cache, []string{"none", "writethrough", "writeback"}))
	}
	switch d.IO {
	case "", virtv1.IONative, virtv1.IOThreads:
	default:
		errs = append(errs, field.NotSupported(dp.Child("io"), d.IO, []string{"native", "threads"}))
	}
	if d.IO == virtv1.IONative && (d.Cache == virtv1.CacheWriteThrough || d.Cache == virtv1.CacheWriteBack) {
		// QEMU's native AIO needs O_DIRECT, which only cache=none gives.
		errs = append(errs, field.Invalid(dp.Child("io"), d.IO, "io native requires cache none"))
	}
	if ep := d.ErrorPolicy; ep != nil {
		switch *ep {
		case virtv1.DiskErrorPolicyStop, virtv1.DiskErrorPolicyIgnore, virtv1.DiskErrorPolicyReport, virtv1.DiskErrorPolicyEnospace:
		default:
			errs = append(errs, field.NotSupported(dp.Child("errorPolicy"), *ep, []string{"stop", "ignore", "report", "enospace"}))
		}
	}
	return errs
}

func validateBlockSize(bp *field.Path, b *virtv1.BlockSize) field.ErrorList {
	if b == nil || b.Custom == nil {
		return nil
	}
	if featureOn(b.MatchVolume) {
		return field.ErrorList{field.Invalid(bp, "custom", "matchVolume and custom cannot both be set")}
	}
	c := b.Custom
	cp := bp.Child("custom")
	if c.Logical > c.Physical {
		return field.ErrorList{field.Invalid(cp.Child("logical"), c.Logical,
			fmt.Sprintf("must be less than or equal to the physical size %d", c.Physical))}
	}
	var errs field.ErrorList
	for _, s := range []struct {
		name string
		v    uint
	}{{"logical", c.Logical}, {"physical", c.Physical}} {
		switch {
		case s.v < minBlockSize:
			errs = append(errs, field.Invalid(cp.Child(s.name), s.v, fmt.Sprintf("must be at least %d", minBlockSize)))
		case s.v > maxBlockSize:
			errs = append(errs, field.Invalid(cp.Child(s.name), s.v, fmt.Sprintf("must be at most %d", maxBlockSize)))
		case s.v&(s.v-1) != 0:
			errs = append(errs, field.Invalid(cp.Child(s.name), s.v, "must be a power of 2"))
		}
	}
	return errs
}

// pciAddressOK accepts libvirt's dddd:bb:ss.f (domain:bus:slot.function).
func pciAddressOK(a string) bool {
	if len(a) != 12 || a[4] != ':' || a[7] != ':' || a[10] != '.' {
		return false
	}
	for _, i := range []int{0, 1, 2, 3, 5, 6, 8, 9} {
		if !isHex(a[i]) {
			return false
		}
	}
	// Slots are 5 bits (00-1f), functions 3 bits (0-7).
	return (a[8] == '0' || a[8] == '1') && a[11] >= '0' && a[11] <= '7'
}

// validateDiskVolumeMapping relates disks to volumes: every disk names a
// volume (one disk per volume follows from unique disk names), LUNs sit on
// claims, and for a VMI every volume is attached as a disk or filesystem.
func validateDiskVolumeMapping(p *field.Path, s *virtv1.VirtualMachineInstanceSpec, mode specMode) field.ErrorList {
	var errs field.ErrorList
	volumes := make(map[string]*virtv1.Volume, len(s.Volumes))
	for i := range s.Volumes {
		if _, dup := volumes[s.Volumes[i].Name]; !dup {
			volumes[s.Volumes[i].Name] = &s.Volumes[i]
		}
	}
	dp := p.Child("domain", "devices", "disks")
	for i := range s.Domain.Devices.Disks {
		d := &s.Domain.Devices.Disks[i]
		if d.Name == "" {
			continue
		}
		v, ok := volumes[d.Name]
		switch {
		case !ok && d.CDRom != nil:
			// An empty drive: declarative hotplug inserts its media.
		case !ok:
			errs = append(errs, field.NotFound(dp.Index(i).Child("name"), d.Name))
		case d.LUN != nil && v.PersistentVolumeClaim == nil && v.DataVolume == nil:
			errs = append(errs, field.Invalid(dp.Index(i).Child("lun"), d.Name,
				"a lun can only be backed by a persistentVolumeClaim or dataVolume volume"))
		}
	}
	if mode.template {
		return errs
	}
	vp := p.Child("volumes")
	for i := range s.Volumes {
		v := &s.Volumes[i]
		if v.Name == "" || v.MemoryDump != nil || hasDiskOrFilesystem(&s.Domain.Devices, v.Name) {
			continue
		}
		errs = append(errs, field.Invalid(vp.Index(i).Child("name"), v.Name,
			"no disk or filesystem uses this volume (DefaultVMI adds one)"))
	}
	return errs
}

// validateBootOrder checks boot orders are unique across disks and
// interfaces; the >0 rule is checked per device.
func validateBootOrder(p *field.Path, s *virtv1.VirtualMachineInstanceSpec) field.ErrorList {
	var errs field.ErrorList
	var seen map[uint]bool
	check := func(bp *field.Path, o *uint) {
		if seen == nil {
			seen = map[uint]bool{}
		}
		if seen[*o] {
			errs = append(errs, field.Duplicate(bp, *o))
		}
		seen[*o] = true
	}
	// Paths are built only for devices that have a boot order.
	for i := range s.Domain.Devices.Disks {
		if o := s.Domain.Devices.Disks[i].BootOrder; o != nil {
			check(p.Child("domain", "devices", "disks").Index(i).Child("bootOrder"), o)
		}
	}
	for i := range s.Domain.Devices.Interfaces {
		if o := s.Domain.Devices.Interfaces[i].BootOrder; o != nil {
			check(p.Child("domain", "devices", "interfaces").Index(i).Child("bootOrder"), o)
		}
	}
	return errs
}
