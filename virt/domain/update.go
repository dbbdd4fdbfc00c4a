package domain

import (
	"context"

	"libvirt.org/go/libvirtxml"
)

// DeviceUpdater changes a device of a domain in place: a CD-ROM's media
// inserted (a source) or ejected (none), KubeVirt's declarative CD-ROM
// hotplug. A Manager that can implements it; callers type-assert.
type DeviceUpdater interface {
	// UpdateDevice replaces the device dev matches (a disk by its target)
	// with dev, in the running domain, its persistent definition, or both
	// as flags say. A domain without such a device fails with
	// ErrInvalidSpec, a live change of a domain that is not running with
	// ErrInvalidState.
	UpdateDevice(ctx context.Context, name string, dev Device, flags DeviceFlags) error
}

// OpUpdateDevice is the Op of a DeviceUpdater's errors.
const OpUpdateDevice = "update-device"

// Media is the source of the media in disk, a drive of a domain's
// document; nil when it holds none (libvirt writes an empty drive with no
// <source> or with an empty file name).
func Media(disk *libvirtxml.DomainDisk) *libvirtxml.DomainDiskSource {
	s := disk.Source
	if s == nil || s.File != nil && s.File.File == "" || s.File == nil && s.Block == nil {
		return nil
	}
	return s
}
