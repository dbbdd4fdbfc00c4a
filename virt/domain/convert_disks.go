package domain

import (
	"strconv"

	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/spec"
	"github.com/virtkit/virtkit/virt/storage"
)

// convertDisks writes one <disk> per spec.domain.devices.disks entry, its
// source taken from the volume's storage plan.
//
// Disks of hotpluggable volumes are left out: the handler attaches them
// after boot, as KubeVirt does.
func (c *converter) convertDisks() error {
	disks := c.spec.Devices.Disks
	if len(disks) == 0 {
		return nil
	}
	if err := c.planIOThreads(); err != nil {
		return err
	}
	c.dev.Disks = make([]libvirtxml.DomainDisk, 0, len(disks))
	parts := make([]diskParts, len(disks))
	var vd, sd int // per-prefix device counters: vda, vdb, ...; sda, sdb, ...
	for i := range disks {
		d := &disks[i]
		field := fieldPath{pathDisks, i}
		vol := c.volume(d.Name)
		if d.CDRom != nil && (vol == nil || spec.Hotpluggable(vol)) {
			// An empty drive, whose media the handler inserts and ejects
			// (KubeVirt's declarative CD-ROM hotplug).
			c.dev.Disks = c.dev.Disks[:len(c.dev.Disks)+1]
			disk := &c.dev.Disks[len(c.dev.Disks)-1]
			if err := c.emptyCDROM(field, d, &parts[i], disk); err != nil {
				return err
			}
			disk.Target.Dev = DeviceName(DevicePrefix(virtv1.DiskBus(disk.Target.Bus)), sd)
			sd++
			continue
		}
		if vol == nil {
			return convErr(ErrInvalidField, field.at(".name"), "no volume named "+strconv.Quote(d.Name)+" in spec.volumes")
		}
		if spec.Hotpluggable(vol) {
			continue
		}
		plan, ok := c.host.Storage[d.Name]
		if !ok {
			return convErr(ErrMissingPlan, field.at(""), "no storage plan for volume "+strconv.Quote(d.Name))
		}
		// Filled in place: a DomainDisk is large, and copying it costs more
		// than building it.
		c.dev.Disks = c.dev.Disks[:len(c.dev.Disks)+1]
		disk := &c.dev.Disks[len(c.dev.Disks)-1]
		if err := c.convertDisk(field, d, &plan, &parts[i], disk); err != nil {
			return err
		}
		if prefix := DevicePrefix(virtv1.DiskBus(disk.Target.Bus)); prefix == "vd" {
			disk.Target.Dev = DeviceName(prefix, vd)
			vd++
		} else {
			disk.Target.Dev = DeviceName(prefix, sd)
			sd++
		}
		c.assignIOThread(disk, d, &parts[i].thread)
	}
	return nil
}

// emptyCDROM renders d, a CD-ROM whose volume is absent or hotplugged, as
// a drive without media: read-only, on its bus (SATA by default), aliased
// after its name as any disk so that the handler finds it.
func (c *converter) emptyCDROM(field fieldPath, d *virtv1.Disk, p *diskParts, disk *libvirtxml.DomainDisk) error {
	bus := orBus(d.CDRom.Bus, virtv1.DiskBusSATA)
	switch bus {
	case virtv1.DiskBusSATA:
	case virtv1.DiskBusSCSI:
		c.scsiNeeded = true
	default:
		return convErr(ErrInvalidField, field.at(".cdrom.bus"), "an empty CD-ROM needs the sata or scsi bus, not "+strconv.Quote(string(bus)))
	}
	p.driver = libvirtxml.DomainDiskDriver{Name: "qemu", Type: "raw"}
	p.alias.Name = "ua-" + d.Name
	p.target = libvirtxml.DomainDiskTarget{Bus: string(bus)}
	if d.CDRom.Tray == virtv1.TrayStateOpen {
		p.target.Tray = "open"
	}
	*disk = libvirtxml.DomainDisk{Device: "cdrom", Driver: &p.driver, Target: &p.target, Alias: &p.alias,
		ReadOnly: &libvirtxml.DomainDiskReadOnly{}, Serial: d.Serial}
	if d.BootOrder != nil && *d.BootOrder > 0 {
		p.boot.Order = *d.BootOrder
		disk.Boot = &p.boot
	}
	return nil
}

func (c *converter) volume(name string) *virtv1.Volume {
	vols := c.vmi.Spec.Volumes
	for i := range vols {
		if vols[i].Name == name {
			return &vols[i]
		}
	}
	return nil
}

func (c *converter) convertDisk(field fieldPath, d *virtv1.Disk, plan *storage.DiskPlan, p *diskParts, disk *libvirtxml.DomainDisk) error {
	p.driver = libvirtxml.DomainDiskDriver{Name: "qemu", Type: string(plan.Format)}
	p.alias.Name = "ua-" + d.Name
	*disk = libvirtxml.DomainDisk{
		Device: "disk",
		Driver: &p.driver,
		Target: &p.target,
		Source: &p.source,
		Serial: d.Serial,
		Alias:  &p.alias,
	}
	readOnly := plan.ReadOnly
	var bus virtv1.DiskBus
	pciAddr := ""
	switch {
	case d.LUN != nil:
		disk.Device, bus = "lun", orBus(d.LUN.Bus, virtv1.DiskBusSCSI)
		readOnly = readOnly || d.LUN.ReadOnly
		if bus != virtv1.DiskBusSCSI && bus != virtv1.DiskBusVirtio {
			return convErr(ErrInvalidField, field.at(".lun.bus"), "a LUN needs the scsi or virtio bus, not "+strconv.Quote(string(bus)))
		}
		if plan.Source != storage.SourceBlock {
			return convErr(ErrInvalidField, field.at(".lun"), "a LUN needs a block volume; "+strconv.Quote(d.Name)+" is a file")
		}
		if d.LUN.Reservation {
			if c.host.Paths.PRHelper == "" {
				return convErr(ErrMissingHostFact, field.at(".lun.reservation"), "the host has no persistent-reservation helper")
			}
			p.source.Reservations = &libvirtxml.DomainDiskReservations{
				Managed: "no",
				Source:  &libvirtxml.DomainDiskReservationsSource{UNIX: &libvirtxml.DomainChardevSourceUNIX{Mode: "client", Path: c.host.Paths.PRHelper}},
			}
		}
	case d.CDRom != nil:
		disk.Device, bus = "cdrom", orBus(d.CDRom.Bus, virtv1.DiskBusSATA)
		readOnly = readOnly || enabled(d.CDRom.ReadOnly, true)
		if bus == virtv1.DiskBusVirtio {
			return convErr(ErrInvalidField, field.at(".cdrom.bus"), "a CD-ROM cannot use the virtio bus")
		}
		if d.CDRom.Tray == virtv1.TrayStateOpen {
			disk.Target.Tray = "open"
		}
	default: // a disk; the API defaults an empty DiskDevice to one
		bus = virtv1.DiskBusVirtio
		if d.Disk != nil {
			bus = orBus(d.Disk.Bus, virtv1.DiskBusVirtio)
			readOnly = readOnly || d.Disk.ReadOnly
			pciAddr = d.Disk.PciAddress
		}
	}
	switch bus {
	case virtv1.DiskBusVirtio:
		disk.Model = c.virtioModel
	case virtv1.DiskBusSCSI:
		c.scsiNeeded = true
	case virtv1.DiskBusUSB:
		c.usbNeeded = true
	case virtv1.DiskBusSATA:
	default:
		return convErr(ErrInvalidField, field.at(""), "unknown bus "+strconv.Quote(string(bus))+" (want virtio, sata, scsi or usb)")
	}
	disk.Target.Bus = string(bus)
	if pciAddr != "" && bus != virtv1.DiskBusVirtio {
		return convErr(ErrInvalidField, field.at(".disk.pciAddress"), "only virtio disks have a PCI address")
	}
	if bus == virtv1.DiskBusVirtio {
		addr, err := c.pciAddress(field.at(".disk.pciAddress"), pciAddr, disk.Alias.Name)
		if err != nil {
			return err
		}
		disk.Address = addr
	}

	switch plan.Source {
	case storage.SourceFile:
		p.file.File = plan.Path
		p.source.File = &p.file
	case storage.SourceBlock:
		p.block.Dev = plan.Path
		p.source.Block = &p.block
	default:
		return convErr(ErrMissingPlan, field.at(""), "storage plan for "+strconv.Quote(d.Name)+" has unknown source type "+strconv.Quote(string(plan.Source)))
	}
	if plan.Path == "" || plan.Format == "" {
		return convErr(ErrMissingPlan, field.at(""), "storage plan for "+strconv.Quote(d.Name)+" lacks a path or a format")
	}

	if err := c.diskDriver(field, d, disk, plan.Source == storage.SourceBlock); err != nil {
		return err
	}
	if readOnly {
		disk.ReadOnly = &libvirtxml.DomainDiskReadOnly{}
	} else if disk.Device == "disk" {
		// Guest TRIM frees space on thin and sparse volumes.
		disk.Driver.Discard = "unmap"
	}
	if d.BootOrder != nil {
		if *d.BootOrder == 0 {
			return convErr(ErrInvalidField, field.at(".bootOrder"), "boot order starts at 1")
		}
		p.boot.Order = *d.BootOrder
		disk.Boot = &p.boot
	}
	if bs := d.BlockSize; bs != nil {
		blockIO, err := blockSize(field, bs, plan)
		if err != nil {
			return err
		}
		disk.BlockIO = blockIO
	}
	return nil
}

func orBus(b, def virtv1.DiskBus) virtv1.DiskBus {
	if b == "" {
		return def
	}
	return b
}

// diskDriver sets cache, io, error policy and sharing.
func (c *converter) diskDriver(field fieldPath, d *virtv1.Disk, disk *libvirtxml.DomainDisk, block bool) error {
	drv := disk.Driver
	switch d.Cache {
	case "", virtv1.CacheNone, virtv1.CacheWriteThrough, virtv1.CacheWriteBack:
		drv.Cache = string(d.Cache)
	default:
		return convErr(ErrInvalidField, field.at(".cache"), "unknown cache mode "+strconv.Quote(string(d.Cache))+" (want none, writethrough or writeback)")
	}
	if enabled(d.Shareable, false) {
		// Writers on several hosts must not cache: QEMU and libvirt require
		// cache=none for a shareable disk.
		if drv.Cache != "" && drv.Cache != string(virtv1.CacheNone) {
			return convErr(ErrInvalidField, field.at(".cache"), "a shareable disk needs cache none")
		}
		drv.Cache = string(virtv1.CacheNone)
		disk.Shareable = &libvirtxml.DomainDiskShareable{}
	}
	switch d.IO {
	case "":
		// Native AIO needs O_DIRECT (cache none); KubeVirt picks it for
		// block devices and leaves files to QEMU's default.
		if block && drv.Cache == string(virtv1.CacheNone) {
			drv.IO = string(virtv1.IONative)
		}
	case virtv1.IONative, virtv1.IOThreads:
		drv.IO = string(d.IO)
	default:
		return convErr(ErrInvalidField, field.at(".io"), "unknown io mode "+strconv.Quote(string(d.IO))+" (want native or threads)")
	}
	if disk.Device == "cdrom" {
		// CD-ROMs report media errors to the guest; libvirt refuses
		// error policies on them otherwise.
		return nil
	}
	drv.ErrorPolicy = string(virtv1.DiskErrorPolicyStop)
	if p := d.ErrorPolicy; p != nil {
		switch *p {
		case virtv1.DiskErrorPolicyStop, virtv1.DiskErrorPolicyIgnore, virtv1.DiskErrorPolicyReport, virtv1.DiskErrorPolicyEnospace:
			drv.ErrorPolicy = string(*p)
		default:
			return convErr(ErrInvalidField, field.at(".errorPolicy"), "unknown error policy "+strconv.Quote(string(*p))+" (want stop, ignore, report or enospace)")
		}
	}
	return nil
}

func blockSize(field fieldPath, bs *virtv1.BlockSize, plan *storage.DiskPlan) (*libvirtxml.DomainDiskBlockIO, error) {
	match := featureOn(bs.MatchVolume)
	switch {
	case bs.Custom != nil && match:
		return nil, convErr(ErrInvalidField, field.at(".blockSize"), "custom and matchVolume are mutually exclusive")
	case bs.Custom != nil:
		cu := bs.Custom
		if cu.Logical == 0 || cu.Physical == 0 || cu.Logical > cu.Physical {
			return nil, convErr(ErrInvalidField, field.at(".blockSize.custom"), "needs logical and physical sizes with logical <= physical")
		}
		return &libvirtxml.DomainDiskBlockIO{LogicalBlockSize: cu.Logical, PhysicalBlockSize: cu.Physical, DiscardGranularity: cu.DiscardGranularity}, nil
	case match:
		if plan.LogicalBlockSize == 0 || plan.PhysicalBlockSize == 0 {
			return nil, convErr(ErrMissingPlan, field.at(".blockSize.matchVolume"), "the storage plan does not report the volume's block sizes")
		}
		return &libvirtxml.DomainDiskBlockIO{LogicalBlockSize: plan.LogicalBlockSize, PhysicalBlockSize: plan.PhysicalBlockSize}, nil
	}
	return nil, nil
}
