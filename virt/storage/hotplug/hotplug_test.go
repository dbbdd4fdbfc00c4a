package hotplug_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
	domainfake "github.com/virtkit/virtkit/virt/domain/fake"
	"github.com/virtkit/virtkit/virt/storage"
	"github.com/virtkit/virtkit/virt/storage/hotplug"
)

func running(t *testing.T, m domain.Manager, controllers ...libvirtxml.DomainController) {
	t.Helper()
	runningWith(t, m, libvirtxml.DomainDeviceList{Controllers: controllers})
}

// runningWith defines and starts the domain "vm" with devices.
func runningWith(t *testing.T, m domain.Manager, devices libvirtxml.DomainDeviceList) {
	t.Helper()
	ctx := context.Background()
	doc := &libvirtxml.Domain{
		Type:    "qemu",
		Name:    "vm",
		Memory:  &libvirtxml.DomainMemory{Value: 128, Unit: "MiB"},
		OS:      &libvirtxml.DomainOS{Type: &libvirtxml.DomainOSType{Arch: "x86_64", Machine: "q35", Type: "hvm"}},
		Devices: &devices,
	}
	if err := m.Define(ctx, doc); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx, "vm", domain.StartOptions{}); err != nil {
		t.Fatal(err)
	}
}

func image(t *testing.T) storage.DiskPlan {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hot.img")
	if err := os.WriteFile(p, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	return storage.DiskPlan{Volume: "hot", Kind: storage.KindPersistentVolumeClaim, Source: storage.SourceFile,
		Path: p, Format: storage.FormatRaw, CapacityBytes: 1 << 20, Hotpluggable: true}
}

func TestAttachDetach(t *testing.T) {
	ctx := context.Background()
	m := domainfake.New()
	running(t, m)
	var got []virtv1.VolumeStatus
	h := hotplug.New(m, hotplug.WithStatus(func(s virtv1.VolumeStatus) { got = append(got, s) }), hotplug.WithPollInterval(time.Millisecond))
	plan := image(t)

	st, err := h.Attach(ctx, "vm", hotplug.Disk{Plan: plan, Bus: virtv1.DiskBusVirtio, Persistent: true, Serial: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	want := []virtv1.VolumeStatus{
		{Name: "hot", Phase: virtv1.HotplugVolumeMounted, Reason: hotplug.ReasonMounted, Message: "Volume hot is mounted in the pod"},
		{Name: "hot", Target: "vda", Phase: virtv1.VolumeReady, Reason: hotplug.ReasonReady, Message: "Successfully attach hotplugged volume hot to VM"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want[1], st); diff != "" {
		t.Errorf("returned status (-want +got):\n%s", diff)
	}
	for _, inactive := range []bool{false, true} {
		doc, err := m.XML(ctx, "vm", domain.XMLOptions{Inactive: inactive})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(doc.Devices.Disks); n != 1 || doc.Devices.Disks[0].Source.File.File != plan.Path || doc.Devices.Disks[0].Serial != "s1" {
			t.Fatalf("inactive=%v: disks %+v", inactive, doc.Devices.Disks)
		}
	}
	if _, err := h.Attach(ctx, "vm", hotplug.Disk{Plan: plan, Bus: virtv1.DiskBusVirtio}); !errors.Is(err, domain.ErrAlreadyExists) {
		t.Errorf("second attach: %v", err)
	}

	sts, err := h.Status(ctx, "vm", storage.Plan{"hot": plan, "cold": {Volume: "cold", Path: plan.Path + ".x"},
		"absent": {Volume: "absent", Path: plan.Path + ".absent", Hotpluggable: true}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]virtv1.VolumeStatus{{Name: "hot", Target: "vda", Phase: virtv1.VolumeReady, Reason: hotplug.ReasonReady}}, sts); diff != "" {
		t.Errorf("Status (-want +got):\n%s", diff)
	}

	got = nil
	if err := h.Detach(ctx, "vm", plan); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]virtv1.VolumeStatus{{Name: "hot", Target: "vda", Phase: virtv1.HotplugVolumeDetaching, Reason: hotplug.ReasonDetaching}}, got); diff != "" {
		t.Errorf("detach statuses (-want +got):\n%s", diff)
	}
	for _, inactive := range []bool{false, true} {
		doc, _ := m.XML(ctx, "vm", domain.XMLOptions{Inactive: inactive})
		if len(doc.Devices.Disks) != 0 {
			t.Errorf("inactive=%v: disk left after detach: %+v", inactive, doc.Devices.Disks)
		}
	}
	if err := h.Detach(ctx, "vm", plan); !errors.Is(err, hotplug.ErrNotAttached) {
		t.Errorf("second detach: %v", err)
	}
	sts, err = h.Status(ctx, "vm", storage.Plan{"hot": plan})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]virtv1.VolumeStatus{{Name: "hot", Phase: virtv1.HotplugVolumeMounted, Reason: hotplug.ReasonMounted}}, sts); diff != "" {
		t.Errorf("Status after detach (-want +got):\n%s", diff)
	}
}

func TestAttachRefusals(t *testing.T) {
	ctx := context.Background()
	m := domainfake.New()
	running(t, m)
	h := hotplug.New(m)
	plan := image(t)
	if _, err := h.Attach(ctx, "vm", hotplug.Disk{Plan: plan}); !errors.Is(err, hotplug.ErrNoSCSIController) {
		t.Errorf("scsi without a controller: %v", err)
	}
	if _, err := h.Attach(ctx, "vm", hotplug.Disk{Plan: plan, Bus: virtv1.DiskBusSATA}); !errors.Is(err, storage.ErrInvalid) {
		t.Errorf("sata: %v", err)
	}
	missing := plan
	missing.Path += ".absent"
	if _, err := h.Attach(ctx, "vm", hotplug.Disk{Plan: missing, Bus: virtv1.DiskBusVirtio}); !errors.Is(err, hotplug.ErrNotMounted) {
		t.Errorf("absent image: %v", err)
	}
	wrong := plan
	wrong.Format = storage.FormatQCOW2
	if _, err := h.Attach(ctx, "vm", hotplug.Disk{Plan: wrong, Bus: virtv1.DiskBusVirtio}); !errors.Is(err, storage.ErrInvalid) {
		t.Errorf("format differing from the plan: %v", err)
	}
	if _, err := h.Attach(ctx, "nope", hotplug.Disk{Plan: plan, Bus: virtv1.DiskBusVirtio}); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("missing domain: %v", err)
	}
}

func TestAttachSCSI(t *testing.T) {
	m := domainfake.New()
	running(t, m, libvirtxml.DomainController{Type: "scsi", Model: "virtio-scsi"})
	st, err := hotplug.New(m).Attach(context.Background(), "vm", hotplug.Disk{Plan: image(t)})
	if err != nil || st.Target != "sda" {
		t.Fatalf("attach: %+v, %v", st, err)
	}
}

// stubborn is a guest that never releases a detached disk.
type stubborn struct{ *domainfake.Manager }

func (stubborn) DetachDevice(context.Context, string, domain.Device, domain.DeviceFlags) error {
	return nil
}

func TestDetachPending(t *testing.T) {
	ctx := context.Background()
	m := domainfake.New()
	running(t, m)
	plan := image(t)
	if _, err := hotplug.New(m).Attach(ctx, "vm", hotplug.Disk{Plan: plan, Bus: virtv1.DiskBusVirtio}); err != nil {
		t.Fatal(err)
	}
	var last virtv1.VolumeStatus
	h := hotplug.New(stubborn{m}, hotplug.WithDetachTimeout(50*time.Millisecond), hotplug.WithPollInterval(5*time.Millisecond),
		hotplug.WithStatus(func(s virtv1.VolumeStatus) { last = s }))
	if err := h.Detach(ctx, "vm", plan); !errors.Is(err, hotplug.ErrDetachPending) {
		t.Fatalf("detach from a guest that keeps the disk: %v", err)
	}
	if last.Phase != virtv1.HotplugVolumeDetaching || last.Reason != hotplug.ReasonDetachPending {
		t.Errorf("last status %+v", last)
	}
	if s, _, err := m.State(ctx, "vm"); err != nil || s != domain.StateRunning {
		t.Errorf("domain %v, %v after a pending detach", s, err)
	}
}

// A disk attached later is named by the rule Convert named the boot disks
// by (domain.DeviceName): the next free name of its bus's prefix, which
// sata and scsi disks share.
func TestAttachNamesAsConvert(t *testing.T) {
	ctx := context.Background()
	vmi := &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns"},
		Spec: virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{
			Resources: virtv1.ResourceRequirements{Requests: k8sv1.ResourceList{k8sv1.ResourceMemory: resource.MustParse("128Mi")}},
		}},
	}
	for _, d := range []struct {
		name string
		bus  virtv1.DiskBus
	}{{"root", virtv1.DiskBusVirtio}, {"data", virtv1.DiskBusSATA}, {"scratch", virtv1.DiskBusSCSI}} {
		vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks,
			virtv1.Disk{Name: d.name, DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: d.bus}}})
		vmi.Spec.Volumes = append(vmi.Spec.Volumes, virtv1.Volume{Name: d.name, VolumeSource: virtv1.VolumeSource{
			EmptyDisk: &virtv1.EmptyDiskSource{Capacity: resource.MustParse("1Mi")}}})
	}
	doc, err := domain.Convert(vmi, domain.Host{Arch: "amd64", Emulation: true, Storage: storage.PreviewPlan(vmi)})
	if err != nil {
		t.Fatal(err)
	}
	m := domainfake.New()
	if err := m.Define(ctx, doc); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx, doc.Name, domain.StartOptions{}); err != nil {
		t.Fatal(err)
	}

	h := hotplug.New(m)
	var got []string
	for _, d := range []struct {
		volume string
		bus    virtv1.DiskBus
	}{{"hot-scsi", virtv1.DiskBusSCSI}, {"hot-virtio", virtv1.DiskBusVirtio}} {
		plan := image(t)
		plan.Volume = d.volume
		st, err := h.Attach(ctx, doc.Name, hotplug.Disk{Plan: plan, Bus: d.bus})
		if err != nil {
			t.Fatalf("attach %s: %v", d.volume, err)
		}
		got = append(got, st.Target)
	}
	// Booted with vda (root), sda (data) and sdb (scratch).
	if diff := cmp.Diff([]string{"sdc", "vdb"}, got); diff != "" {
		t.Errorf("hotplugged device names (-want +got):\n%s", diff)
	}
}

// A volume whose disk is an empty CD-ROM drive is inserted as its media,
// and ejected: the drive stays.
func TestInsertEject(t *testing.T) {
	ctx := context.Background()
	m := domainfake.New()
	runningWith(t, m, libvirtxml.DomainDeviceList{Disks: []libvirtxml.DomainDisk{{Device: "cdrom", Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "raw"},
		Target: &libvirtxml.DomainDiskTarget{Dev: "sda", Bus: "scsi"}, ReadOnly: &libvirtxml.DomainDiskReadOnly{}, Alias: &libvirtxml.DomainAlias{Name: hotplug.Alias("hot")}}}})
	h := hotplug.New(m, hotplug.WithPollInterval(time.Millisecond))
	plan := image(t)
	drive := func() *libvirtxml.DomainDisk {
		t.Helper()
		live, err := m.XML(ctx, "vm", domain.XMLOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(live.Devices.Disks); n != 1 {
			t.Fatalf("%d disks, want the one drive", n)
		}
		return &live.Devices.Disks[0]
	}
	st, err := h.Attach(ctx, "vm", hotplug.Disk{Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	if st.Phase != virtv1.VolumeReady || st.Target != "sda" {
		t.Errorf("status %+v, want Ready on sda", st)
	}
	if m := domain.Media(drive()); m == nil || m.File == nil || m.File.File != plan.Path {
		t.Errorf("media %+v, want %s", m, plan.Path)
	}
	if _, err := h.Attach(ctx, "vm", hotplug.Disk{Plan: plan}); !errors.Is(err, domain.ErrAlreadyExists) {
		t.Errorf("inserting into a full drive: %v, want ErrAlreadyExists", err)
	}
	for range 2 { // ejecting an empty drive changes nothing
		if err := h.Eject(ctx, "vm", "hot"); err != nil {
			t.Fatal(err)
		}
		if m := domain.Media(drive()); m != nil {
			t.Errorf("media %+v after the eject", m)
		}
	}
	if err := h.Eject(ctx, "vm", "other"); !errors.Is(err, hotplug.ErrNotAttached) {
		t.Errorf("ejecting a drive the domain lacks: %v, want ErrNotAttached", err)
	}
}
