package smoke

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testguest"
)

// seedISO writes files into a folder and makes an ISO 9660 image with the
// given volume label (genisoimage stands in for virt/storage's Go builder,
// which is what later issues test).
func seedISO(t *testing.T, dir, label string, files map[string]string) string {
	t.Helper()
	src := filepath.Join(dir, label+"-src")
	for name, body := range files {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	iso := filepath.Join(dir, label+".iso")
	if b, err := exec.Command("genisoimage", "-quiet", "-o", iso, "-V", label, "-J", "-r", src).CombinedOutput(); err != nil {
		t.Fatalf("genisoimage: %v\n%s", err, b)
	}
	return iso
}

func virtioDisk(path, format, dev string, readonly bool) libvirtxml.DomainDisk {
	d := libvirtxml.DomainDisk{
		Device: "disk",
		Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: format},
		Source: &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: path}},
		Target: &libvirtxml.DomainDiskTarget{Dev: dev, Bus: "virtio"},
	}
	if readonly {
		d.ReadOnly = &libvirtxml.DomainDiskReadOnly{}
	}
	return d
}

// runGuest starts the domain, waits for each console line in order, and
// powers the guest off again through ACPI.
func runGuest(t *testing.T, conn *libvirt.Connect, doc *libvirtxml.Domain, console string, want ...*regexp.Regexp) {
	t.Helper()
	_ = os.Remove(console)
	xml, err := doc.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	dom, err := conn.DomainCreateXML(xml, 0)
	if err != nil {
		t.Fatalf("start %s: %v", doc.Name, err)
	}
	defer dom.Free()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, re := range want {
		testenv.WaitConsole(t, ctx, console, re)
	}
	if err := dom.ShutdownFlags(libvirt.DOMAIN_SHUTDOWN_ACPI_POWER_BTN); err != nil {
		t.Fatal(err)
	}
	testenv.WaitConsole(t, ctx, console, regexp.MustCompile(`^`+testguest.PowerOff+`$`))
	for {
		if _, err := conn.LookupDomainByName(doc.Name); err != nil {
			return // a transient domain disappears once it is off
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s did not power off", doc.Name)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// The guest's init does what the later issues' tests rely on: DHCP on its
// first NIC, NoCloud host name and user-data, an HTTP endpoint, and a data
// disk marker that survives a restart.
func TestGuestNoCloudNetworkAndDataDisk(t *testing.T) {
	d := testenv.Libvirtd(t)
	g := testenv.Guest(t)
	dir := testenv.Dir(t)
	conn, err := libvirt.NewConnect(d.URI())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	seed := seedISO(t, dir, "cidata", map[string]string{
		"meta-data": "instance-id: smoke-1\nlocal-hostname: nocloud-host\n",
		// The HTTP server starts after user-data: ask it from the background.
		"user-data": "#!/bin/sh\necho \"user-data says $(hostname)\"\n(sleep 2; wget -q -O - http://127.0.0.1:80/ | sed 's/^/http: /') &\n",
	})
	data := filepath.Join(dir, "data.qcow2")
	if b, err := exec.Command("qemu-img", "create", "-q", "-f", "qcow2", data, "16M").CombinedOutput(); err != nil {
		t.Fatalf("qemu-img: %v\n%s", err, b)
	}
	console := filepath.Join(dir, "console.log")
	doc := testguest.Domain("smoke-nocloud", g, 256, console)
	doc.Devices.Disks = []libvirtxml.DomainDisk{virtioDisk(seed, "raw", "vda", true), virtioDisk(data, "qcow2", "vdb", false)}
	doc.Devices.Interfaces = []libvirtxml.DomainInterface{{
		Source: &libvirtxml.DomainInterfaceSource{User: &libvirtxml.DomainInterfaceSourceUser{}},
		Model:  &libvirtxml.DomainInterfaceModel{Type: "virtio"},
	}}

	runGuest(t, conn, doc, console,
		regexp.MustCompile(`^VIRTKIT-NET eth0 ip=10\.0\.2\.15/24 gw=10\.0\.2\.2 `),
		regexp.MustCompile(`^VIRTKIT-SEED cidata$`),
		regexp.MustCompile(`^user-data says nocloud-host$`),
		regexp.MustCompile(`^VIRTKIT-USERDATA-DONE rc=0$`),
		regexp.MustCompile(`^VIRTKIT-HOSTNAME nocloud-host$`),
		regexp.MustCompile(`^VIRTKIT-DISK vdb previous=none wrote=1 readback=ok$`),
		regexp.MustCompile(`^VIRTKIT-READY$`),
		regexp.MustCompile(`^http: virtkit-guest nocloud-host heartbeat=[0-9]+$`),
	)
	runGuest(t, conn, doc, console,
		regexp.MustCompile(`^VIRTKIT-DISK vdb previous=1 wrote=2 readback=ok$`),
		regexp.MustCompile(`^VIRTKIT-HEARTBEAT 1$`),
	)
}

// ConfigDrive (label config-2) gives the host name from meta_data.json and runs user_data.
func TestGuestConfigDrive(t *testing.T) {
	d := testenv.Libvirtd(t)
	g := testenv.Guest(t)
	dir := testenv.Dir(t)
	conn, err := libvirt.NewConnect(d.URI())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	seed := seedISO(t, dir, "config-2", map[string]string{
		"openstack/latest/meta_data.json": `{"uuid": "6e2a0c1f-8f1d-4a57-9c3e-0d3f6b1b2a11", "hostname": "configdrive-host"}`,
		"openstack/latest/user_data":      "#!/bin/sh\necho configdrive-user-data-ran\n",
	})
	console := filepath.Join(dir, "console.log")
	doc := testguest.Domain("smoke-configdrive", g, 256, console)
	doc.Devices.Disks = []libvirtxml.DomainDisk{virtioDisk(seed, "raw", "vda", true)}
	runGuest(t, conn, doc, console,
		regexp.MustCompile(`^VIRTKIT-SEED config-2$`),
		regexp.MustCompile(`^configdrive-user-data-ran$`),
		regexp.MustCompile(`^VIRTKIT-HOSTNAME configdrive-host$`),
		regexp.MustCompile(`^VIRTKIT-READY$`),
	)
}
