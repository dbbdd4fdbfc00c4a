package domaintest

import (
	"errors"
	"testing"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
)

// stepMedia checks domain.DeviceUpdater on a domain of its own with an
// empty SATA CD-ROM drive: media inserted (the Target's Disk image) and
// ejected in the running domain, and refusals for a drive that does not
// exist.
func stepMedia(t *testing.T, s *suite) {
	u, ok := s.m.(domain.DeviceUpdater)
	if !ok {
		t.Fatalf("%T does not implement domain.DeviceUpdater", s.m)
	}
	ctx, cancel := s.tg.ctx()
	defer cancel()
	drive := func(src *libvirtxml.DomainDiskSource, format string) *libvirtxml.DomainDisk {
		return &libvirtxml.DomainDisk{Device: "cdrom", Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: format},
			Source: src, Target: &libvirtxml.DomainDiskTarget{Dev: "sdc", Bus: "sata"}, ReadOnly: &libvirtxml.DomainDiskReadOnly{},
			Alias: &libvirtxml.DomainAlias{Name: "ua-installer"}}
	}
	name := s.ownDomain(t, "-cd", "a domain with an empty CD-ROM", func(doc *libvirtxml.Domain) *libvirtxml.Domain {
		doc.Devices.Disks = append(doc.Devices.Disks, *drive(nil, "raw"))
		return doc
	})
	if err := s.m.Start(ctx, name, domain.StartOptions{}); err != nil {
		t.Fatalf("Start: %v", err)
	}
	media := func() *libvirtxml.DomainDiskSource {
		t.Helper()
		live, err := s.m.XML(ctx, name, domain.XMLOptions{})
		if err != nil {
			t.Fatalf("XML: %v", err)
		}
		for _, d := range live.Devices.Disks {
			if d.Target != nil && d.Target.Dev == "sdc" {
				return domain.Media(&d)
			}
		}
		t.Fatal("the live domain has no sdc")
		return nil
	}
	if m := media(); m != nil {
		t.Fatalf("the empty drive holds %+v at boot", m)
	}
	img := s.tg.Disk.Source
	if err := u.UpdateDevice(ctx, name, drive(img, s.tg.Disk.Driver.Type), domain.DeviceLive); err != nil {
		t.Fatalf("UpdateDevice inserting media: %v", err)
	}
	if m := media(); m == nil || m.File == nil || m.File.File != img.File.File {
		t.Errorf("after inserting %s the drive holds %+v", img.File.File, m)
	}
	if err := u.UpdateDevice(ctx, name, drive(nil, "raw"), domain.DeviceLive); err != nil {
		t.Fatalf("UpdateDevice ejecting: %v", err)
	}
	if m := media(); m != nil {
		t.Errorf("after ejecting the drive holds %+v", m)
	}
	missing := drive(nil, "raw")
	missing.Target.Dev = "sdq"
	if err := u.UpdateDevice(ctx, name, missing, domain.DeviceLive); err == nil {
		t.Error("UpdateDevice of a drive the domain lacks: no error")
	}
	if err := u.UpdateDevice(ctx, name, drive(nil, "raw"), 0); !errors.Is(err, domain.ErrInvalidSpec) {
		t.Errorf("UpdateDevice without flags: %v, want ErrInvalidSpec", err)
	}
}
