package smoke

import (
	"context"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testguest"
)

// bootAndShutdown defines and starts doc on a private libvirtd, waits for the
// guest's boot marker and heartbeat on the console, then asks for an ACPI
// shutdown and waits for the guest to power itself off.
func bootAndShutdown(t *testing.T, doc *libvirtxml.Domain, console string) {
	t.Helper()
	d := testenv.Libvirtd(t)
	conn, err := libvirt.NewConnect(d.URI())
	if err != nil {
		t.Fatalf("connect %s: %v", d.URI(), err)
	}
	defer conn.Close()

	xml, err := doc.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	dom, err := conn.DomainDefineXML(xml)
	if err != nil {
		t.Fatalf("define: %v", err)
	}
	defer dom.Free()
	if err := dom.Create(); err != nil {
		t.Fatalf("start: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	booted := testenv.WaitConsole(t, ctx, console, regexp.MustCompile(`^`+testguest.BootedMarker+` kernel=\S+-cloud-amd64$`))
	t.Logf("console: %s", booted)
	testenv.WaitConsole(t, ctx, console, regexp.MustCompile(`^VIRTKIT-HEARTBEAT 2$`))

	if err := dom.ShutdownFlags(libvirt.DOMAIN_SHUTDOWN_ACPI_POWER_BTN); err != nil {
		t.Fatalf("ACPI shutdown: %v", err)
	}
	testenv.WaitConsole(t, ctx, console, regexp.MustCompile(`^`+testguest.PowerOff+`$`))
	for {
		state, reason, err := dom.GetState()
		if err != nil {
			t.Fatalf("state: %v", err)
		}
		if state == libvirt.DOMAIN_SHUTOFF {
			if libvirt.DomainShutoffReason(reason) != libvirt.DOMAIN_SHUTOFF_SHUTDOWN {
				t.Fatalf("guest shut off with reason %d, want %d (shutdown)", reason, libvirt.DOMAIN_SHUTOFF_SHUTDOWN)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("guest still in state %d after the ACPI shutdown", state)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := dom.Undefine(); err != nil {
		t.Fatalf("undefine: %v", err)
	}
}

func TestGuestBootsFromKernel(t *testing.T) {
	g := testenv.Guest(t)
	console := filepath.Join(testenv.Dir(t), "console.log")
	bootAndShutdown(t, testguest.Domain("smoke-kernel", g, 256, console), console)
}

func TestGuestBootsFromDisk(t *testing.T) {
	g := testenv.Guest(t)
	dir := testenv.Dir(t)
	// Boot from a copy-on-write overlay: the built image stays untouched.
	overlay := filepath.Join(dir, "root.qcow2")
	if err := testguest.CreateOverlay(context.Background(), g.Disk, overlay); err != nil {
		t.Fatal(err)
	}
	console := filepath.Join(dir, "console.log")
	doc := testguest.Domain("smoke-disk", g, 256, console)
	testguest.BootFromDisk(doc, overlay)
	bootAndShutdown(t, doc, console)
}
