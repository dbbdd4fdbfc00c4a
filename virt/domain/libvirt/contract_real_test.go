package libvirt_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/virt/domain/domaintest"
	"github.com/virtkit/virtkit/virt/domain/libvirt"
)

// The contract on a private libvirtd booting the test guest under software
// emulation (TCG): real boots, console, ACPI, hotplug, and the guest's
// QEMU guest agent.
func TestContractRealLibvirtd(t *testing.T) {
	domaintest.Run(t, func(t *testing.T) domaintest.Target {
		d := testenv.Libvirtd(t)
		g := testenv.Guest(t)
		dir := testenv.Dir(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		m, err := libvirt.New(ctx, d.URI())
		if err != nil {
			t.Fatalf("New(%s): %v", d.URI(), err)
		}
		disk := filepath.Join(dir, "data.qcow2")
		if out, err := exec.CommandContext(ctx, "qemu-img", "create", "-q", "-f", "qcow2", disk, "16M").CombinedOutput(); err != nil {
			t.Fatalf("qemu-img create %s: %v: %s", disk, err, out)
		}
		logPath := func(name string) string {
			return filepath.Join(dir, strings.ReplaceAll(name, "/", "_")+".console.log")
		}
		return domaintest.Target{
			Manager: m,
			Domain:  func(name string) *libvirtxml.Domain { return guestDocument(name, g, logPath(name)) },
			Disk: &libvirtxml.DomainDisk{
				Device: "disk",
				Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "qcow2"},
				Source: &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: disk}},
				Target: &libvirtxml.DomainDiskTarget{Dev: "vdb", Bus: "virtio"},
			},
			Timeout: 2 * time.Minute,
			ConsoleLog: func(name string) (string, error) {
				b, err := os.ReadFile(logPath(name))
				return string(b), err
			},
			Booted:      regexp.MustCompile(`(?m)^` + testguest.BootedMarker + ` kernel=\S+`),
			Ready:       regexp.MustCompile(`(?m)^` + testguest.ReadyMarker),
			ConsoleLine: regexp.MustCompile(`^` + testguest.HeartbeatLine + ` \d+$`),
			// A stopped daemon answers nothing, as a hung one would.
			Block: func() func() {
				if err := syscall.Kill(d.PID(), syscall.SIGSTOP); err != nil {
					t.Fatalf("SIGSTOP libvirtd: %v", err)
				}
				return func() { _ = syscall.Kill(d.PID(), syscall.SIGCONT) }
			},
			Caps: domaintest.Capabilities{
				RealGuest:    true,
				StartPaused:  true,
				ACPIShutdown: true,
				Console:      true,
				Agent:        true,
				Screenshot:   true,
				Hotplug:      true,
				DeviceEvents: true,
				Resize:       true,
				MediaChange:  true,
			},
		}
	})
}

// guestDocument boots the test guest with its first serial port on a pty
// (libvirt streams only pty consoles) that also logs to consoleLog, a VGA
// display for screenshots and the guest agent's channel.
func guestDocument(name string, g testguest.Artifacts, consoleLog string) *libvirtxml.Domain {
	doc := testguest.Domain(name, g, 256, consoleLog)
	doc.Devices.Serials[0].Source = &libvirtxml.DomainChardevSource{Pty: &libvirtxml.DomainChardevSourcePty{}}
	// Appending keeps the log across restarts of the domain.
	doc.Devices.Serials[0].Log = &libvirtxml.DomainChardevLog{File: consoleLog, Append: "on"}
	doc.Devices.Videos = []libvirtxml.DomainVideo{{Model: libvirtxml.DomainVideoModel{Type: "vga"}}}
	doc.Devices.Channels = append(doc.Devices.Channels, libvirtxml.DomainChannel{
		Source: &libvirtxml.DomainChardevSource{UNIX: &libvirtxml.DomainChardevSourceUNIX{Mode: "bind"}},
		Target: &libvirtxml.DomainChannelTarget{VirtIO: &libvirtxml.DomainChannelTargetVirtIO{Name: "org.qemu.guest_agent.0"}},
	})
	return doc
}
