package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

// Interface is what a node agent needs from this package for one VMI: a plan
// (checked, nothing written), the preparation of what the plan creates, and
// the release of what lived only as long as the VMI. Manager implements it;
// virt/storage/fake records calls for callers' unit tests.
type Interface interface {
	// Plan decides, for every volume a disk of vmi uses, where its bytes
	// are and in which format, reading image headers but writing nothing.
	// Problems (a missing file or device, an unknown or unsafe format, an
	// image larger than its claim) come back together, each a *VolumeError
	// naming the volume.
	Plan(ctx context.Context, vmi *virtv1.VirtualMachineInstance, pod Pod) (Plan, error)
	// Prepare creates what plan marks Create: disk images, overlays, ISOs.
	// Either all of it is in place afterwards or, on error, none of it.
	Prepare(ctx context.Context, vmi *virtv1.VirtualMachineInstance, pod Pod, plan Plan) error
	// Release removes the images that live only as long as the VMI on this
	// node (Discardable ones); claims and host disks are left alone.
	Release(ctx context.Context, plan Plan) error
}

// Manager plans and prepares a VMI's volumes in a launcher pod.
type Manager struct {
	o options
}

var _ Interface = (*Manager)(nil)

// New returns a Manager; without options it reads the real file system and
// uses KubeVirt's launcher layout.
func New(opts ...Option) *Manager { return &Manager{o: newOptions(opts)} }

// Layout returns the layout the Manager uses, defaults filled in.
func (m *Manager) Layout() Layout { return m.o.layout }

// Plan implements Interface.
func (m *Manager) Plan(ctx context.Context, vmi *virtv1.VirtualMachineInstance, pod Pod) (Plan, error) {
	index := make(map[string]int, len(vmi.Spec.Volumes))
	for i := range vmi.Spec.Volumes {
		index[vmi.Spec.Volumes[i].Name] = i
	}
	plan := Plan{}
	var errs []error
	for i, d := range vmi.Spec.Domain.Devices.Disks {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		vi, ok := index[d.Name]
		if !ok && d.CDRom != nil {
			continue // an empty CD-ROM drive: nothing to store
		}
		if !ok {
			errs = append(errs, &VolumeError{Volume: d.Name, Field: fmt.Sprintf("spec.domain.devices.disks[%d].name", i),
				Detail: "no volume of this name in spec.volumes", Err: ErrInvalid})
			continue
		}
		if _, done := plan[d.Name]; done {
			continue
		}
		p, err := m.planVolume(ctx, vmi, vi, pod)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		plan[d.Name] = p
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return plan, nil
}

// planner carries one volume's context for the per-source functions.
type planner struct {
	m     *Manager
	ctx   context.Context
	vmi   *virtv1.VirtualMachineInstance
	index int
	vol   *virtv1.Volume
	facts VolumeFacts
	pod   Pod
	field string
}

func (m *Manager) planVolume(ctx context.Context, vmi *virtv1.VirtualMachineInstance, i int, pod Pod) (DiskPlan, error) {
	v := &vmi.Spec.Volumes[i]
	p := &planner{m: m, ctx: ctx, vmi: vmi, index: i, vol: v, facts: pod.Volumes[v.Name], pod: pod}
	src := &v.VolumeSource
	switch {
	case src.PersistentVolumeClaim != nil:
		p.field = p.fieldOf(KindPersistentVolumeClaim)
		return p.claim(KindPersistentVolumeClaim, src.PersistentVolumeClaim.ReadOnly, src.PersistentVolumeClaim.Hotpluggable)
	case src.DataVolume != nil:
		p.field = p.fieldOf(KindDataVolume)
		return p.claim(KindDataVolume, false, src.DataVolume.Hotpluggable)
	case src.HostDisk != nil:
		p.field = p.fieldOf(KindHostDisk)
		return p.hostDisk(src.HostDisk)
	case src.EmptyDisk != nil:
		p.field = p.fieldOf(KindEmptyDisk)
		return p.emptyDisk(src.EmptyDisk)
	case src.Ephemeral != nil:
		p.field = p.fieldOf(KindEphemeral)
		return p.ephemeral()
	case src.ContainerDisk != nil:
		p.field = p.fieldOf(KindContainerDisk)
		return p.containerDisk()
	case src.CloudInitNoCloud != nil:
		p.field = p.fieldOf(KindCloudInitNoCloud)
		return p.cloudInit(KindCloudInitNoCloud)
	case src.CloudInitConfigDrive != nil:
		p.field = p.fieldOf(KindCloudInitConfigDrive)
		return p.cloudInit(KindCloudInitConfigDrive)
	case src.ConfigMap != nil:
		p.field = p.fieldOf(KindConfigMap)
		return p.configDisk(KindConfigMap, filepath.Join(m.o.layout.PrivateDir, "config-map", v.Name),
			src.ConfigMap.Optional != nil && *src.ConfigMap.Optional, src.ConfigMap.VolumeLabel)
	case src.Secret != nil:
		p.field = p.fieldOf(KindSecret)
		return p.configDisk(KindSecret, filepath.Join(m.o.layout.PrivateDir, "secret", v.Name),
			src.Secret.Optional != nil && *src.Secret.Optional, src.Secret.VolumeLabel)
	case src.ServiceAccount != nil:
		p.field = p.fieldOf(KindServiceAccount)
		return p.configDisk(KindServiceAccount, filepath.Join(m.o.layout.PrivateDir, "service-account-disk"), false, "")
	case src.DownwardAPI != nil:
		p.field = p.fieldOf(KindDownwardAPI)
		return p.configDisk(KindDownwardAPI, filepath.Join(m.o.layout.PrivateDir, "downwardapi", v.Name), false, src.DownwardAPI.VolumeLabel)
	}
	return DiskPlan{}, &VolumeError{Volume: v.Name, Field: "spec.volumes[" + strconv.Itoa(i) + "]",
		Detail: "virtkit cannot make a disk of this volume source yet (sysprep, downwardMetrics, memoryDump, containerPath)", Err: ErrUnsupported}
}

func (p *planner) fieldOf(k Kind) string {
	return "spec.volumes[" + strconv.Itoa(p.index) + "]." + string(k)
}

func (p *planner) fail(path string, sentinel error, format string, args ...any) error {
	return &VolumeError{Volume: p.vol.Name, Field: p.field, Path: path, Detail: fmt.Sprintf(format, args...), Err: sentinel}
}

func (p *planner) base() DiskPlan {
	return DiskPlan{
		Volume:            p.vol.Name,
		Source:            SourceFile,
		LogicalBlockSize:  p.facts.LogicalBlockSize,
		PhysicalBlockSize: p.facts.PhysicalBlockSize,
	}
}

// inspect reads an image that must exist and be safe to run.
func (p *planner) inspect(path, what string) (ImageInfo, error) {
	info, err := p.read(path, what)
	if err != nil {
		return info, err
	}
	return info, p.check(path, info)
}

// read reads an image that must exist.
func (p *planner) read(path, what string) (ImageInfo, error) {
	info, err := p.m.o.inspector.Inspect(p.ctx, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return info, p.fail(path, ErrNotFound, "%s is missing", what)
	case err != nil:
		return info, &VolumeError{Volume: p.vol.Name, Field: p.field, Path: path, Detail: "reading " + what, Err: err}
	}
	return info, nil
}

// check refuses formats virtkit does not run and qcow2 images that point
// at other host files.
func (p *planner) check(path string, info ImageInfo) error {
	switch {
	case info.Format == "":
		return p.fail(path, ErrUnknownFormat, "a %s image; only raw and qcow2 are supported", info.Detected)
	case info.BackingFile != "":
		return p.fail(path, ErrUnsafeImage, "qcow2 image with backing file %q", info.BackingFile)
	case info.ExternalData:
		return p.fail(path, ErrUnsafeImage, "qcow2 image with an external data file")
	}
	return nil
}

func (p *planner) exists(path string) (bool, error) {
	ok, err := p.m.o.inspector.Exists(p.ctx, path)
	if err != nil {
		return false, &VolumeError{Volume: p.vol.Name, Field: p.field, Path: path, Err: err}
	}
	return ok, nil
}

// claim plans a persistentVolumeClaim or dataVolume: its block device, or
// disk.img on its file system (created sparse when absent and writable).
// Either is raw whatever its first bytes say, as in KubeVirt: they are the
// guest's, and a qcow2 header a guest writes must not make the next start
// read its disk as qcow2, let alone open the backing file it names.
func (p *planner) claim(kind Kind, readOnly, hot bool) (DiskPlan, error) {
	d := p.base()
	d.Kind, d.Hotpluggable = kind, hot
	d.ReadOnly = readOnly || p.facts.ReadOnly
	l := p.m.o.layout
	name := p.vol.Name
	if p.facts.Mode == VolumeModeBlock {
		d.Source, d.Path = SourceBlock, p.facts.Path
		if d.Path == "" {
			d.Path = filepath.Join(l.DevDir, name)
			if hot {
				d.Path = filepath.Join(l.HotplugDir, name)
			}
		}
		info, err := p.read(d.Path, "the claim's block device")
		if err != nil {
			return d, err
		}
		if !info.Block {
			return d, p.fail(d.Path, ErrInvalid, "the claim is in Block mode but this is not a block device")
		}
		d.Format, d.CapacityBytes = FormatRaw, info.Length
		return d, nil
	}
	if p.facts.Mode != "" && p.facts.Mode != VolumeModeFilesystem {
		return d, p.fail("", ErrInvalid, "unknown volume mode %q (want Filesystem or Block)", p.facts.Mode)
	}
	switch {
	case p.facts.Path != "":
		d.Path = filepath.Join(p.facts.Path, DiskImageName)
	case hot:
		d.Path = filepath.Join(l.HotplugDir, name+".img")
	default:
		d.Path = filepath.Join(l.claimDir(name), DiskImageName)
	}
	info, err := p.m.o.inspector.Inspect(p.ctx, d.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return p.newClaimImage(d)
	}
	if err != nil {
		return d, &VolumeError{Volume: name, Field: p.field, Path: d.Path, Detail: "reading the disk image", Err: err}
	}
	if c := p.facts.CapacityBytes; c > 0 && info.Length > c {
		return d, p.fail(d.Path, ErrImageTooLarge, "the image's %d bytes exceed the claim's capacity %d bytes", info.Length, c)
	}
	d.Format, d.CapacityBytes = FormatRaw, info.Length
	return d, nil
}

// newClaimImage plans a raw disk.img for a writable claim that has none, as
// large as the claim less the file system's overhead, in whole MiB.
func (p *planner) newClaimImage(d DiskPlan) (DiskPlan, error) {
	if d.ReadOnly {
		return d, p.fail(d.Path, ErrNotFound, "the claim is read-only and holds no disk image")
	}
	dir := filepath.Dir(d.Path)
	ok, err := p.exists(dir)
	if err != nil {
		return d, err
	}
	if !ok {
		return d, p.fail(dir, ErrNotFound, "the claim is not mounted in the pod")
	}
	c := p.facts.CapacityBytes
	if c <= 0 {
		return d, p.fail(d.Path, ErrInvalid, "no disk image and the claim's capacity is unknown, so none can be created")
	}
	// The destination of a migration that copies the claim: the copy needs
	// an image of the source image's size.
	src, image := p.migrationSource()
	if src > c {
		return d, p.fail(d.Path, ErrImageTooLarge, "the migration copies %d bytes into this claim, more than its capacity %d bytes", src, c)
	}
	if image {
		d.Format, d.CapacityBytes, d.Create = FormatRaw, src, true
		return d, nil
	}
	if src > 0 {
		c = src // the source's image was made from its claim's capacity, as this one is
	}
	size := ClaimImageSize(c, p.m.o.fsOverhead)
	if size <= 0 {
		return d, p.fail(d.Path, ErrInvalid, "the claim's capacity %d bytes leaves no room for a disk image", c)
	}
	d.Format, d.CapacityBytes, d.Create = FormatRaw, size, true
	return d, nil
}

// migrationSource says how large the image a migration copies into this
// volume's new claim is: the source image's size as its volumeStatus
// reports it (image true), else the capacity of the source claim, which
// made the source's image (the VMI's status.migratedVolumes); 0 when this
// volume is not copied.
func (p *planner) migrationSource() (bytes int64, image bool) {
	copied := false
	for _, m := range p.vmi.Status.MigratedVolumes {
		copied = copied || m.VolumeName == p.vol.Name
	}
	if !copied {
		return 0, false
	}
	for _, vs := range p.vmi.Status.VolumeStatus {
		if vs.Name == p.vol.Name && vs.Size > 0 {
			return vs.Size, true
		}
	}
	for _, m := range p.vmi.Status.MigratedVolumes {
		if m.VolumeName != p.vol.Name || m.SourcePVCInfo == nil {
			continue
		}
		q, ok := m.SourcePVCInfo.Capacity[corev1.ResourceStorage]
		if !ok {
			q, ok = m.SourcePVCInfo.Requests[corev1.ResourceStorage]
		}
		if ok {
			return q.Value(), false
		}
	}
	return 0, false
}

// hostDisk plans a hostDisk as KubeVirt runs one: the launcher pod mounts
// the folder of h.Path (a hostPath volume) at the volume's claim folder,
// and the image is the file of h.Path's name there. So the image is
// reached only through that one folder: never another host path, never a
// link (a link there would lead wherever the pod's root allows), never a
// block device.
func (p *planner) hostDisk(h *virtv1.HostDisk) (DiskPlan, error) {
	d := p.base()
	d.Kind = KindHostDisk
	if !filepath.IsAbs(h.Path) {
		return d, p.fail("", ErrInvalid, "path %q is not absolute", h.Path)
	}
	name, ok := HostDiskFile(h.Path)
	if !ok {
		return d, p.fail("", ErrInvalid, "path %q names no file in a folder", h.Path)
	}
	if h.Type != virtv1.HostDiskExists && h.Type != virtv1.HostDiskExistsOrCreate {
		return d, p.fail("", ErrInvalid, "unknown type %q (want Disk or DiskOrCreate)", h.Type)
	}
	dir := p.m.o.layout.claimDir(p.vol.Name)
	d.Path = filepath.Join(dir, name)
	if fi, err := p.m.o.fsys.Lstat(d.Path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return d, p.fail(d.Path, ErrInvalid, "a symbolic link; a hostDisk is a disk image file in the folder of its path")
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return d, &VolumeError{Volume: p.vol.Name, Field: p.field, Path: d.Path, Detail: "reading the host disk", Err: err}
	}
	info, err := p.m.o.inspector.Inspect(p.ctx, d.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && h.Type == virtv1.HostDiskExistsOrCreate:
		size := h.Capacity.Value()
		if size <= 0 {
			return d, p.fail(d.Path, ErrInvalid, "type DiskOrCreate needs a positive capacity to create the image")
		}
		there, err := p.exists(dir)
		if err != nil {
			return d, err
		}
		if !there {
			return d, p.fail(dir, ErrNotFound, "the folder of %s is not mounted in the pod", h.Path)
		}
		d.Format, d.CapacityBytes, d.Create = FormatRaw, size, true
		return d, nil
	case errors.Is(err, fs.ErrNotExist):
		return d, p.fail(d.Path, ErrNotFound, "the host disk %s is missing (type Disk)", h.Path)
	case err != nil:
		return d, &VolumeError{Volume: p.vol.Name, Field: p.field, Path: d.Path, Detail: "reading the host disk", Err: err}
	}
	if info.Block {
		return d, p.fail(d.Path, ErrInvalid, "a block device; a hostDisk is a disk image file")
	}
	// Raw, as KubeVirt has a hostDisk, for the reason a claim's image is.
	d.Format, d.CapacityBytes = FormatRaw, info.Length
	return d, nil
}

func (p *planner) emptyDisk(e *virtv1.EmptyDiskSource) (DiskPlan, error) {
	d := p.base()
	d.Kind, d.Path, d.Format = KindEmptyDisk, p.m.o.layout.emptyDisk(p.vol.Name), FormatQCOW2
	size := e.Capacity.Value()
	if size <= 0 {
		return d, p.fail("", ErrInvalid, "capacity %s must be positive", e.Capacity.String())
	}
	d.CapacityBytes = (size + 511) / 512 * 512
	info, err := p.m.o.inspector.Inspect(p.ctx, d.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.Create = true
		return d, nil
	case err != nil:
		return d, &VolumeError{Volume: p.vol.Name, Field: p.field, Path: d.Path, Detail: "reading the empty disk", Err: err}
	}
	// Still there from an earlier start in this pod: the guest's data.
	if err := p.check(d.Path, info); err != nil {
		return d, err
	}
	if info.Format != FormatQCOW2 {
		return d, p.fail(d.Path, ErrInvalid, "an existing empty disk must be qcow2, found %s", info.Format)
	}
	d.CapacityBytes = info.VirtualSize
	return d, nil
}

// overlay plans a fresh qcow2 overlay on a read-only base image.
func (p *planner) overlay(kind Kind, base, what string) (DiskPlan, error) {
	d := p.base()
	d.Kind, d.Path, d.Format, d.Create = kind, p.m.o.layout.overlay(p.vol.Name), FormatQCOW2, true
	info, err := p.inspect(base, what)
	if err != nil {
		return d, err
	}
	if info.VirtualSize <= 0 {
		return d, p.fail(base, ErrInvalid, "%s is empty", what)
	}
	// qcow2 sizes are whole sectors; a raw base of another length reads
	// as zeros past its end.
	d.BackingPath, d.BackingFormat, d.CapacityBytes = base, info.Format, (info.VirtualSize+511)/512*512
	return d, nil
}

func (p *planner) ephemeral() (DiskPlan, error) {
	base := p.facts.Path
	switch {
	case p.facts.Mode == VolumeModeBlock && base == "":
		base = filepath.Join(p.m.o.layout.DevDir, p.vol.Name)
	case p.facts.Mode != VolumeModeBlock:
		dir := base
		if dir == "" {
			dir = p.m.o.layout.claimDir(p.vol.Name)
		}
		base = filepath.Join(dir, DiskImageName)
	}
	return p.overlay(KindEphemeral, base, "the claim's disk image")
}

func (p *planner) containerDisk() (DiskPlan, error) {
	base := p.facts.Path
	if base == "" {
		base = filepath.Join(p.m.o.layout.ContainerDisksDir, "disk_"+strconv.Itoa(p.index)+".img")
	}
	return p.overlay(KindContainerDisk, base, "the container disk image")
}

func (p *planner) cloudInit(kind Kind) (DiskPlan, error) {
	d := p.base()
	d.Kind, d.Format, d.ReadOnly, d.Create = kind, FormatRaw, true, true
	dir := p.m.o.layout.cloudInitDir(p.vmi.Namespace, p.vmi.Name)
	if kind == KindCloudInitNoCloud {
		d.Path, d.Label = filepath.Join(dir, "noCloud.iso"), NoCloudLabel
	} else {
		d.Path, d.Label = filepath.Join(dir, "configdrive.iso"), ConfigDriveLabel
	}
	if _, err := CloudInitFiles(p.vmi, p.vol, p.pod.Secrets); err != nil {
		return d, p.fail("", ErrInvalid, "%v", err)
	}
	return d, nil
}

func (p *planner) configDisk(kind Kind, defaultDir string, optional bool, label string) (DiskPlan, error) {
	d := p.base()
	d.Kind, d.Format, d.ReadOnly, d.Create, d.Label = kind, FormatRaw, true, true, label
	d.Path, d.ContentDir = p.m.o.layout.configISO(p.vol.Name), p.facts.Path
	if d.ContentDir == "" {
		d.ContentDir = defaultDir
	}
	if err := checkISOLabel(label); err != nil {
		return d, p.fail("", ErrInvalid, "volumeLabel: %v", err)
	}
	files, err := p.m.o.inspector.Files(p.ctx, d.ContentDir)
	switch {
	case errors.Is(err, fs.ErrNotExist) && optional:
		d.ContentDir = "" // an optional source that is absent: an empty disk
		return d, nil
	case errors.Is(err, fs.ErrNotExist):
		return d, p.fail(d.ContentDir, ErrNotFound, "the %s's files are not in the pod", kind)
	case err != nil:
		return d, &VolumeError{Volume: p.vol.Name, Field: p.field, Path: d.ContentDir, Detail: "listing files", Err: err}
	}
	for _, f := range files {
		if err := checkISOPath(f); err != nil {
			return d, p.fail(d.ContentDir, ErrInvalid, "%v", err)
		}
	}
	return d, nil
}

// ClaimImageSize is the size of the disk.img made in a file system claim of
// capacity bytes that has none: the capacity less the file system's
// overhead (a fraction, DefaultFilesystemOverhead unless configured), in
// whole MiB. Zero or less means there is no room.
func ClaimImageSize(capacity int64, overhead float64) int64 {
	return int64(float64(capacity)*(1-overhead)) &^ (1<<20 - 1)
}
