package storage_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/virt/domain"
	domainlibvirt "github.com/virtkit/virtkit/virt/domain/libvirt"
	"github.com/virtkit/virtkit/virt/storage"
)

// guestEnv is a private libvirtd, the test guest and a launcher pod's
// folders in a test folder.
type guestEnv struct {
	t      *testing.T
	ctx    context.Context
	m      domain.Manager
	g      testguest.Artifacts
	dir    string
	layout storage.Layout
	st     *storage.Manager
}

func newGuestEnv(t *testing.T) *guestEnv {
	t.Helper()
	d := testenv.Libvirtd(t)
	g := testenv.Guest(t)
	dir := testenv.Dir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	m, err := domainlibvirt.New(ctx, d.URI())
	if err != nil {
		t.Fatalf("domain manager on %s: %v", d.URI(), err)
	}
	t.Cleanup(func() { _ = m.Close() })
	l := storage.Layout{
		EphemeralDir:      filepath.Join(dir, "ephemeral"),
		PrivateDir:        filepath.Join(dir, "private"),
		ContainerDisksDir: filepath.Join(dir, "container-disks"),
		HotplugDir:        filepath.Join(dir, "hotplug"),
		DevDir:            filepath.Join(dir, "dev"),
	}
	return &guestEnv{t: t, ctx: ctx, m: m, g: g, dir: dir, layout: l, st: storage.New(storage.WithLayout(l))}
}

// diskOf is the domain disk of a plan, as virt/domain writes it (the
// parts the test guest needs), on virtio as dev.
func diskOf(p storage.DiskPlan, dev string) libvirtxml.DomainDisk {
	d := libvirtxml.DomainDisk{
		Device: "disk",
		Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: string(p.Format)},
		Target: &libvirtxml.DomainDiskTarget{Dev: dev, Bus: "virtio"},
		Alias:  &libvirtxml.DomainAlias{Name: "ua-" + p.Volume},
	}
	if p.Source == storage.SourceBlock {
		d.Source = &libvirtxml.DomainDiskSource{Block: &libvirtxml.DomainDiskSourceBlock{Dev: p.Path}}
	} else {
		d.Source = &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: p.Path}}
	}
	if p.ReadOnly {
		d.ReadOnly = &libvirtxml.DomainDiskReadOnly{}
	}
	return d
}

// plan plans and prepares vmi's storage, failing the test on error.
func (e *guestEnv) plan(vmi *virtv1.VirtualMachineInstance, pod storage.Pod) storage.Plan {
	e.t.Helper()
	p, err := e.st.Plan(e.ctx, vmi, pod)
	if err != nil {
		e.t.Fatalf("Plan: %v", err)
	}
	if err := e.st.Prepare(e.ctx, vmi, pod, p); err != nil {
		e.t.Fatalf("Prepare: %v", err)
	}
	return p
}

// boot defines and starts a domain with disks and returns its console log.
// The domain is destroyed and undefined when the test ends.
func (e *guestEnv) boot(name string, disks ...libvirtxml.DomainDisk) string {
	e.t.Helper()
	return e.bootWith(name, nil, disks...)
}

// bootWith is boot with a last change to the domain document.
func (e *guestEnv) bootWith(name string, change func(*libvirtxml.Domain), disks ...libvirtxml.DomainDisk) string {
	e.t.Helper()
	console := filepath.Join(e.dir, name+".console.log")
	_ = os.Remove(console)
	doc := testguest.Domain(name, e.g, 256, console)
	doc.Devices.Disks = disks
	if change != nil {
		change(doc)
	}
	if err := e.m.Define(e.ctx, doc); err != nil {
		e.t.Fatalf("define %s: %v", name, err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = e.m.Destroy(ctx, name)
		_ = e.m.Undefine(ctx, name)
	})
	e.t.Cleanup(func() {
		if e.t.Failed() {
			b, _ := os.ReadFile(console)
			var keep []string
			for _, l := range strings.Split(string(b), "\n") {
				if !strings.HasPrefix(l, testguest.HeartbeatLine) {
					keep = append(keep, l)
				}
			}
			e.t.Logf("console of %s without heartbeats:\n%s", name, strings.Join(keep, "\n"))
		}
	})
	if err := e.m.Start(e.ctx, name, domain.StartOptions{}); err != nil {
		e.t.Fatalf("start %s: %v", name, err)
	}
	return console
}

// wait waits for each console line, in any order.
func (e *guestEnv) wait(console string, lines ...string) {
	e.t.Helper()
	for _, l := range lines {
		testenv.WaitConsole(e.t, e.ctx, console, regexp.MustCompile(l))
	}
}

// powerOff shuts the guest down through ACPI, waits until it is off and
// undefines it.
func (e *guestEnv) powerOff(name string) {
	e.t.Helper()
	if err := e.m.Shutdown(e.ctx, name); err != nil {
		e.t.Fatalf("shutdown %s: %v", name, err)
	}
	for {
		st, _, err := e.m.State(e.ctx, name)
		if err != nil {
			e.t.Fatalf("state of %s: %v", name, err)
		}
		if st == domain.StateShutoff {
			break
		}
		select {
		case <-e.ctx.Done():
			e.t.Fatalf("%s did not power off", name)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := e.m.Undefine(e.ctx, name); err != nil {
		e.t.Fatalf("undefine %s: %v", name, err)
	}
}

// The guest finds the NoCloud ISO built in Go by its label, takes its host
// name from meta-data and runs the user-data script.
func TestGuestNoCloud(t *testing.T) {
	e := newGuestEnv(t)
	vmi := vmiWith(vol("ci", virtv1.VolumeSource{CloudInitNoCloud: &virtv1.CloudInitNoCloudSource{
		UserDataSecretRef: &corev1.LocalObjectReference{Name: "ci-secret"}}}))
	vmi.Spec.Hostname = "nocloud-host"
	pod := storage.Pod{Secrets: map[string]map[string][]byte{"ci-secret": {
		"userdata": []byte("#!/bin/sh\necho \"user-data says $(hostname)\"\n")}}}
	plan := e.plan(vmi, pod)
	console := e.boot("storage-nocloud", diskOf(plan["ci"], "vda"))
	e.wait(console,
		`^VIRTKIT-SEED cidata$`,
		`^user-data says nocloud-host$`,
		`^VIRTKIT-USERDATA-DONE rc=0$`,
		`^VIRTKIT-HOSTNAME nocloud-host$`,
		`^VIRTKIT-READY$`)
	e.powerOff("storage-nocloud")
	if err := e.st.Release(e.ctx, plan); err != nil {
		t.Fatal(err)
	}
}

// The same with ConfigDrive: openstack/latest/meta_data.json and user_data.
func TestGuestConfigDrive(t *testing.T) {
	e := newGuestEnv(t)
	vmi := vmiWith(vol("cd", virtv1.VolumeSource{CloudInitConfigDrive: &virtv1.CloudInitConfigDriveSource{
		UserData: "#!/bin/sh\necho configdrive-user-data-ran\n"}}))
	vmi.Name = "configdrive-host"
	plan := e.plan(vmi, storage.Pod{})
	console := e.boot("storage-configdrive", diskOf(plan["cd"], "vda"))
	e.wait(console,
		`^VIRTKIT-SEED config-2$`,
		`^configdrive-user-data-ran$`,
		`^VIRTKIT-USERDATA-DONE rc=0$`,
		`^VIRTKIT-HOSTNAME configdrive-host$`,
		`^VIRTKIT-READY$`)
	e.powerOff("storage-configdrive")
}

// Across a restart of the VMI (power off, Release, Plan, Prepare, boot):
// the marker on a claim's disk.img survives; an ephemeral disk starts again
// from its base; a containerDisk's base image is byte for byte what it was.
func TestGuestDiskPersistence(t *testing.T) {
	e := newGuestEnv(t)
	l := e.layout
	claimDir := filepath.Join(l.PrivateDir, "vmi-disks", "data")
	mkdir(t, claimDir)
	// The ephemeral volume's base already carries a marker, n=5.
	ephBase := filepath.Join(l.PrivateDir, "vmi-disks", "eph", "disk.img")
	marked := make([]byte, 16<<20)
	copy(marked, "VIRTKIT-DATA n=5\n")
	writeFile(t, ephBase, marked)
	// The container disk is a blank raw image.
	rootBase := filepath.Join(l.ContainerDisksDir, "disk_2.img")
	writeFile(t, rootBase, make([]byte, 16<<20))

	vmi := vmiWith(
		vol("data", pvc("data-claim")),
		vol("eph", virtv1.VolumeSource{Ephemeral: &virtv1.EphemeralVolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "golden"}}}),
		vol("root", virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "example/disk"}}),
		vol("scratch", virtv1.VolumeSource{EmptyDisk: &virtv1.EmptyDiskSource{Capacity: resource.MustParse("8Mi")}}),
	)
	pod := storage.Pod{Volumes: map[string]storage.VolumeFacts{"data": {CapacityBytes: 64 << 20}}}
	boot := func(want ...string) storage.Plan {
		plan := e.plan(vmi, pod)
		console := e.boot("storage-disks",
			diskOf(plan["data"], "vda"), diskOf(plan["eph"], "vdb"), diskOf(plan["root"], "vdc"), diskOf(plan["scratch"], "vdd"))
		e.wait(console, append(want, `^VIRTKIT-READY$`)...)
		e.powerOff("storage-disks")
		if err := e.st.Release(e.ctx, plan); err != nil {
			t.Fatal(err)
		}
		return plan
	}
	first := boot(
		`^VIRTKIT-DISK vda previous=none wrote=1 readback=ok$`,
		`^VIRTKIT-DISK vdb previous=5 wrote=6 readback=ok$`,
		`^VIRTKIT-DISK vdc previous=none wrote=1 readback=ok$`,
		`^VIRTKIT-DISK vdd previous=none wrote=1 readback=ok$`)
	if !first["data"].Create {
		t.Error("first start: the claim's disk.img was not planned for creation")
	}
	second := boot(
		`^VIRTKIT-DISK vda previous=1 wrote=2 readback=ok$`,
		`^VIRTKIT-DISK vdb previous=5 wrote=6 readback=ok$`,
		`^VIRTKIT-DISK vdc previous=none wrote=1 readback=ok$`,
		`^VIRTKIT-DISK vdd previous=none wrote=1 readback=ok$`)
	if second["data"].Create {
		t.Error("second start: the claim's disk.img was planned for creation again")
	}
	if b, err := os.ReadFile(rootBase); err != nil || !bytes.Equal(b, make([]byte, 16<<20)) {
		t.Errorf("the containerDisk base changed (%v)", err)
	}
	if b, err := os.ReadFile(ephBase); err != nil || !bytes.Equal(b, marked) {
		t.Errorf("the ephemeral volume's base changed (%v)", err)
	}
	if b, err := os.ReadFile(first["data"].Path); err != nil || !bytes.HasPrefix(b, []byte("VIRTKIT-DATA n=2\n")) {
		t.Errorf("the claim's disk.img does not carry the second marker (%v)", err)
	}
}
