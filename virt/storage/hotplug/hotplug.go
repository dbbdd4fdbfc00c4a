// Package hotplug attaches disks of hotpluggable volumes (claims and data
// volumes marked hotpluggable) to a running domain and detaches them again,
// through the domain Manager, reporting the volume status phases KubeVirt
// reports.
//
// It sits above virt/storage (whose DiskPlan it attaches) and virt/domain
// (whose Manager it drives); virt/domain must not import it.
//
// What it does not do: make the volume reach the node and the pod (KubeVirt's
// attachment pod and the handler's bind mount; phases Pending, Bound and
// AttachedToNode belong to that caller), or unmount it afterwards
// (UnMountedFromPod).
package hotplug

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/storage"
)

// Devices is the part of a domain Manager that hotplug uses.
type Devices interface {
	AttachDevice(ctx context.Context, name string, dev domain.Device, flags domain.DeviceFlags) error
	DetachDevice(ctx context.Context, name string, dev domain.Device, flags domain.DeviceFlags) error
	XML(ctx context.Context, name string, opts domain.XMLOptions) (*libvirtxml.Domain, error)
}

var _ Devices = domain.Manager(nil)

// Sentinel errors.
var (
	// ErrNotAttached: Detach found no disk of the volume in the domain.
	ErrNotAttached = errors.New("volume is not attached")
	// ErrDetachPending: the guest has not released the disk in time. The
	// domain keeps running with the disk attached; retry Detach later.
	ErrDetachPending = errors.New("guest has not released the disk")
	// ErrNoSCSIController: a scsi disk needs a virtio-scsi controller in the domain.
	ErrNoSCSIController = errors.New("the domain has no SCSI controller")
	// ErrNotMounted: the volume's image is not in the pod yet.
	ErrNotMounted = errors.New("volume is not mounted in the pod")
)

// Reasons set in VolumeStatus.Reason, as KubeVirt names them.
const (
	ReasonMounted       = "VolumeMountedToPod"
	ReasonReady         = "VolumeReady"
	ReasonAttachFailed  = "VolumeAttachFailed"
	ReasonDetaching     = "VolumeDetaching"
	ReasonDetachPending = "VolumeDetachPending"
)

// Option changes a Hotplugger.
type Option func(*Hotplugger)

// WithStatus sets a function called with each phase a volume enters
// (MountedToPod, Ready; Detaching), e.g. to patch the VMI's status.
func WithStatus(f func(virtv1.VolumeStatus)) Option { return func(h *Hotplugger) { h.status = f } }

// WithPollInterval sets how often the domain is read while waiting for the
// guest (default 100 ms).
func WithPollInterval(d time.Duration) Option { return func(h *Hotplugger) { h.poll = d } }

// WithDetachTimeout bounds how long Detach waits for the guest to release a
// disk (default 30 s; the context may end it sooner).
func WithDetachTimeout(d time.Duration) Option { return func(h *Hotplugger) { h.detachTimeout = d } }

// WithInspector sets how the pod's files are checked (default storage.OSInspector).
func WithInspector(i storage.Inspector) Option { return func(h *Hotplugger) { h.inspector = i } }

// Hotplugger attaches and detaches hotpluggable volumes' disks.
type Hotplugger struct {
	dev           Devices
	status        func(virtv1.VolumeStatus)
	poll          time.Duration
	detachTimeout time.Duration
	inspector     storage.Inspector
}

// New returns a Hotplugger driving dev (a domain.Manager).
func New(dev Devices, opts ...Option) *Hotplugger {
	h := &Hotplugger{dev: dev, status: func(virtv1.VolumeStatus) {}, poll: 100 * time.Millisecond,
		detachTimeout: 30 * time.Second, inspector: storage.OSInspector{}}
	for _, o := range opts {
		o(h)
	}
	return h
}

// Disk is one hotplug request.
type Disk struct {
	// Plan is the volume's storage plan (storage.Manager.Plan of the VMI
	// with the volume in spec.volumes, marked hotpluggable).
	Plan storage.DiskPlan
	// Bus is virtio or scsi; empty means scsi, KubeVirt's default for
	// hotplugged disks (the domain then needs a virtio-scsi controller).
	Bus virtv1.DiskBus
	// ReadOnly presents the disk read-only (also when Plan.ReadOnly).
	ReadOnly bool
	// Serial is the disk's serial number, if any.
	Serial string
	// Persistent also adds the disk to the domain's persistent definition.
	Persistent bool
}

// Alias is the device alias a volume's disk carries ("ua-" marks a
// user-given alias in libvirt; virt/domain uses the same for cold disks).
func Alias(volume string) string { return "ua-" + volume }

// Attach adds the volume's disk to the running domain and returns its
// status once the domain shows it (phase Ready, Target the guest device
// name). The image must already be in the pod (phase MountedToPod is
// reported once it is checked).
func (h *Hotplugger) Attach(ctx context.Context, domainName string, d Disk) (virtv1.VolumeStatus, error) {
	p := d.Plan
	st := virtv1.VolumeStatus{Name: p.Volume}
	info, err := h.inspector.Inspect(ctx, p.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return st, fmt.Errorf("hotplug %s: %s: %w", p.Volume, p.Path, ErrNotMounted)
	case err != nil:
		return st, fmt.Errorf("hotplug %s: %w", p.Volume, err)
	case info.Format != p.Format:
		return st, fmt.Errorf("hotplug %s: %s is %s, the plan says %s: %w", p.Volume, p.Path, info.Format, p.Format, storage.ErrInvalid)
	}
	st.Phase, st.Reason, st.Message = virtv1.HotplugVolumeMounted, ReasonMounted, "Volume "+p.Volume+" is mounted in the pod"
	h.status(st)

	live, err := h.dev.XML(ctx, domainName, domain.XMLOptions{})
	if err != nil {
		return st, fmt.Errorf("hotplug %s: %w", p.Volume, err)
	}
	if got := find(live, p); got != nil {
		if got.Device == "cdrom" && domain.Media(got) == nil {
			return h.insert(ctx, domainName, d, got, st)
		}
		return st, fmt.Errorf("hotplug %s: already attached to %s: %w", p.Volume, domainName, domain.ErrAlreadyExists)
	}
	bus := d.Bus
	if bus == "" {
		bus = virtv1.DiskBusSCSI
	}
	disk, err := diskFor(live, d, bus)
	if err != nil {
		return st, fmt.Errorf("hotplug %s: %w", p.Volume, err)
	}
	flags := domain.DeviceLive
	if d.Persistent {
		flags |= domain.DevicePersistent
	}
	if err := h.dev.AttachDevice(ctx, domainName, disk, flags); err != nil {
		st.Reason, st.Message = ReasonAttachFailed, err.Error()
		h.status(st)
		return st, fmt.Errorf("hotplug %s: %w", p.Volume, err)
	}
	st.Target = disk.Target.Dev
	return h.ready(ctx, domainName, p, st, "the disk", func(*libvirtxml.DomainDisk) bool { return true })
}

// ready waits until the running domain shows the volume's disk as shown
// says (what names it in the error), and returns st Ready with the disk's
// target.
func (h *Hotplugger) ready(ctx context.Context, domainName string, p storage.DiskPlan, st virtv1.VolumeStatus, what string, shown func(*libvirtxml.DomainDisk) bool) (virtv1.VolumeStatus, error) {
	for {
		live, err := h.dev.XML(ctx, domainName, domain.XMLOptions{})
		if err != nil {
			return st, fmt.Errorf("hotplug %s: %w", p.Volume, err)
		}
		if got := find(live, p); got != nil && shown(got) {
			if got.Target != nil {
				st.Target = got.Target.Dev
			}
			st.Phase, st.Reason = virtv1.VolumeReady, ReasonReady
			st.Message = "Successfully attach hotplugged volume " + p.Volume + " to VM"
			h.status(st)
			return st, nil
		}
		if err := sleep(ctx, h.poll); err != nil {
			return st, fmt.Errorf("hotplug %s: waiting for the domain to show %s: %w", p.Volume, what, err)
		}
	}
}

// insert puts the volume's image into drive, the domain's empty CD-ROM of
// that volume, as media (KubeVirt's declarative CD-ROM hotplug), and
// returns its status once the domain shows it.
func (h *Hotplugger) insert(ctx context.Context, domainName string, d Disk, drive *libvirtxml.DomainDisk, st virtv1.VolumeStatus) (virtv1.VolumeStatus, error) {
	p := d.Plan
	u, ok := h.dev.(domain.DeviceUpdater)
	if !ok {
		return st, fmt.Errorf("hotplug %s: inserting media into a CD-ROM: %T cannot change a device: %w", p.Volume, h.dev, domain.ErrUnsupported)
	}
	cd := *drive
	cd.Driver = &libvirtxml.DomainDiskDriver{Name: "qemu", Type: string(p.Format)}
	src, err := sourceOf(p)
	if err != nil {
		return st, fmt.Errorf("hotplug %s: %w", p.Volume, err)
	}
	cd.Source = src
	cd.ReadOnly = &libvirtxml.DomainDiskReadOnly{}
	if err := u.UpdateDevice(ctx, domainName, &cd, domain.DeviceLive); err != nil {
		st.Reason, st.Message = ReasonAttachFailed, err.Error()
		h.status(st)
		return st, fmt.Errorf("hotplug %s: inserting media: %w", p.Volume, err)
	}
	return h.ready(ctx, domainName, p, st, "the media", func(d *libvirtxml.DomainDisk) bool { return domain.Media(d) != nil })
}

// Eject takes the volume's media out of its CD-ROM drive, which stays in
// the domain, empty (the VMI's disk outlives its hotplugged volume). A
// drive that is empty already is left as it is; a domain without the
// drive fails with ErrNotAttached.
func (h *Hotplugger) Eject(ctx context.Context, domainName, volume string) error {
	live, err := h.dev.XML(ctx, domainName, domain.XMLOptions{})
	if err != nil {
		return fmt.Errorf("eject %s: %w", volume, err)
	}
	drive := find(live, storage.DiskPlan{Volume: volume})
	if drive == nil || drive.Device != "cdrom" {
		return fmt.Errorf("eject %s from %s: no CD-ROM drive: %w", volume, domainName, ErrNotAttached)
	}
	if domain.Media(drive) == nil {
		return nil
	}
	u, ok := h.dev.(domain.DeviceUpdater)
	if !ok {
		return fmt.Errorf("eject %s: %T cannot change a device: %w", volume, h.dev, domain.ErrUnsupported)
	}
	cd := *drive
	cd.Source = nil
	cd.Driver = &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "raw"}
	if err := u.UpdateDevice(ctx, domainName, &cd, domain.DeviceLive); err != nil {
		return fmt.Errorf("eject %s: %w", volume, err)
	}
	return nil
}

// Detach removes the volume's disk from the running domain (and from its
// persistent definition when it is there) and waits until the guest has
// released it. A guest that does not release it in time leaves the disk
// attached and the domain running: the error wraps ErrDetachPending.
func (h *Hotplugger) Detach(ctx context.Context, domainName string, plan storage.DiskPlan) error {
	live, err := h.dev.XML(ctx, domainName, domain.XMLOptions{})
	if err != nil {
		return fmt.Errorf("unplug %s: %w", plan.Volume, err)
	}
	disk := find(live, plan)
	if disk == nil {
		return fmt.Errorf("unplug %s from %s: %w", plan.Volume, domainName, ErrNotAttached)
	}
	st := virtv1.VolumeStatus{Name: plan.Volume, Phase: virtv1.HotplugVolumeDetaching, Reason: ReasonDetaching}
	if disk.Target != nil {
		st.Target = disk.Target.Dev
	}
	h.status(st)
	if err := h.dev.DetachDevice(ctx, domainName, disk, domain.DeviceLive); err != nil {
		return fmt.Errorf("unplug %s: %w", plan.Volume, err)
	}
	if inactive, err := h.dev.XML(ctx, domainName, domain.XMLOptions{Inactive: true}); err == nil {
		if d := find(inactive, plan); d != nil {
			if err := h.dev.DetachDevice(ctx, domainName, d, domain.DevicePersistent); err != nil {
				return fmt.Errorf("unplug %s from the persistent definition: %w", plan.Volume, err)
			}
		}
	}
	wait, cancel := context.WithTimeout(ctx, h.detachTimeout)
	defer cancel()
	for {
		live, err := h.dev.XML(ctx, domainName, domain.XMLOptions{})
		if err != nil {
			return fmt.Errorf("unplug %s: %w", plan.Volume, err)
		}
		if find(live, plan) == nil {
			return nil
		}
		if err := sleep(wait, h.poll); err != nil {
			st.Reason, st.Message = ReasonDetachPending, "the guest has not released the disk"
			h.status(st)
			if ctx.Err() != nil {
				return fmt.Errorf("unplug %s: %w (%w)", plan.Volume, ErrDetachPending, ctx.Err())
			}
			return fmt.Errorf("unplug %s: after %s: %w", plan.Volume, h.detachTimeout, ErrDetachPending)
		}
	}
}

// Status reports the phase of each hotpluggable volume of plan, sorted by
// name, as the running domain and the pod show it now: Ready (with Target)
// when the domain has its disk, MountedToPod when only its image is in the
// pod; volumes with neither are left out. A handler that restarted uses it
// to rebuild the VMI's volume status.
func (h *Hotplugger) Status(ctx context.Context, domainName string, plan storage.Plan) ([]virtv1.VolumeStatus, error) {
	live, err := h.dev.XML(ctx, domainName, domain.XMLOptions{})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(plan))
	for n, p := range plan {
		if p.Hotpluggable {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var out []virtv1.VolumeStatus
	for _, n := range names {
		p := plan[n]
		st := virtv1.VolumeStatus{Name: n}
		if d := find(live, p); d != nil {
			st.Phase, st.Reason = virtv1.VolumeReady, ReasonReady
			if d.Target != nil {
				st.Target = d.Target.Dev
			}
			out = append(out, st)
			continue
		}
		ok, err := h.inspector.Exists(ctx, p.Path)
		if err != nil {
			return nil, err
		}
		if ok {
			st.Phase, st.Reason = virtv1.HotplugVolumeMounted, ReasonMounted
			out = append(out, st)
		}
	}
	return out, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// find returns the domain's disk of the volume: by alias, else by source.
func find(doc *libvirtxml.Domain, p storage.DiskPlan) *libvirtxml.DomainDisk {
	if doc == nil || doc.Devices == nil {
		return nil
	}
	for i := range doc.Devices.Disks {
		d := &doc.Devices.Disks[i]
		if d.Alias != nil && d.Alias.Name == Alias(p.Volume) {
			return d
		}
		if s := d.Source; s != nil && p.Path != "" &&
			(s.File != nil && s.File.File == p.Path || s.Block != nil && s.Block.Dev == p.Path) {
			return d
		}
	}
	return nil
}

// diskFor builds the disk device, named after the first free guest device
// name of its bus.
func diskFor(live *libvirtxml.Domain, d Disk, bus virtv1.DiskBus) (*libvirtxml.DomainDisk, error) {
	p := d.Plan
	switch bus {
	case virtv1.DiskBusVirtio:
	case virtv1.DiskBusSCSI:
		if !hasSCSI(live) {
			return nil, ErrNoSCSIController
		}
	default:
		return nil, fmt.Errorf("bus %q cannot be hotplugged (want virtio or scsi): %w", bus, storage.ErrInvalid)
	}
	prefix := domain.DevicePrefix(bus)
	used := map[string]bool{}
	if live.Devices != nil {
		for _, x := range live.Devices.Disks {
			if x.Target != nil {
				used[x.Target.Dev] = true
			}
		}
	}
	dev := ""
	for n := 0; dev == ""; n++ {
		if name := domain.DeviceName(prefix, n); !used[name] {
			dev = name
		}
	}
	disk := &libvirtxml.DomainDisk{
		Device: "disk",
		Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: string(p.Format)},
		Target: &libvirtxml.DomainDiskTarget{Dev: dev, Bus: string(bus)},
		Alias:  &libvirtxml.DomainAlias{Name: Alias(p.Volume)},
		Serial: d.Serial,
	}
	src, err := sourceOf(p)
	if err != nil {
		return nil, err
	}
	disk.Source = src
	if d.ReadOnly || p.ReadOnly {
		disk.ReadOnly = &libvirtxml.DomainDiskReadOnly{}
	}
	return disk, nil
}

// sourceOf is the disk source of a volume's image: a file or a block
// device.
func sourceOf(p storage.DiskPlan) (*libvirtxml.DomainDiskSource, error) {
	switch p.Source {
	case storage.SourceFile:
		return &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: p.Path}}, nil
	case storage.SourceBlock:
		return &libvirtxml.DomainDiskSource{Block: &libvirtxml.DomainDiskSourceBlock{Dev: p.Path}}, nil
	}
	return nil, fmt.Errorf("plan has unknown source type %q: %w", p.Source, storage.ErrInvalid)
}

func hasSCSI(doc *libvirtxml.Domain) bool {
	if doc.Devices == nil {
		return false
	}
	for _, c := range doc.Devices.Controllers {
		if c.Type == "scsi" {
			return true
		}
	}
	return false
}
