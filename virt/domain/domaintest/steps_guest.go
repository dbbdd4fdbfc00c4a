package domaintest

import (
	"bytes"
	"errors"
	"image/png"
	"strings"
	"testing"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
)

// Steps that need the guest running: its console, counters, agent, devices
// and restarts.
func stepConsole(t *testing.T, s *suite) {
	ctx, cancel := s.tg.ctx()
	defer cancel()
	c, err := s.m.Console(ctx, s.name)
	if !s.tg.Caps.Console {
		wantErr(t, "Console", err, domain.ErrUnsupported, s.name)
		return
	}
	if err != nil {
		t.Fatalf("Console: %v", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("\n")); err != nil {
		t.Errorf("console Write: %v", err)
	}
	if s.tg.GuestSays != nil {
		s.tg.GuestSays(s.name, "VIRTKIT-HEARTBEAT 1\n")
	}
	line, err := domain.WaitConsoleLine(ctx, c, s.tg.ConsoleLine)
	if err != nil {
		t.Fatalf("console stream: %v", err)
	}
	t.Logf("console stream: %s", line)
	if err := c.Close(); err != nil {
		t.Errorf("console Close: %v", err)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Errorf("console Read after Close succeeded")
	}
}
func stepScreenshot(t *testing.T, s *suite) {
	ctx, cancel := s.tg.ctx()
	defer cancel()
	shot, err := s.m.Screenshot(ctx, s.name)
	if !s.tg.Caps.Screenshot {
		wantErr(t, "Screenshot without a video device", err, domain.ErrUnsupported, s.name)
		return
	}
	if err != nil {
		t.Fatalf("Screenshot: %v", err)
	}
	b, err := shot.PNG()
	if err != nil {
		t.Fatalf("Screenshot (%s, %d bytes) as PNG: %v", shot.MIME, len(shot.Data), err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("decoding the PNG of a %s screenshot: %v", shot.MIME, err)
	}
	if r := img.Bounds(); r.Dx() < 320 || r.Dy() < 200 {
		t.Errorf("Screenshot: %dx%d pixels, want a display of at least 320x200", r.Dx(), r.Dy())
	}
	t.Logf("screenshot: %s, %d bytes, %v", shot.MIME, len(shot.Data), img.Bounds())
	if _, err := s.m.Screenshot(ctx, s.name+"-missing"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("Screenshot of a missing domain: %v, want ErrNotFound", err)
	}
}
func stepStats(t *testing.T, s *suite) {
	ctx, cancel := s.tg.ctx()
	defer cancel()
	st, err := s.m.Stats(ctx, s.name)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	if st.Domain != s.name || st.State != domain.StateRunning {
		t.Errorf("Stats: domain %q state %v, want %q running", st.Domain, st.State, s.name)
	}
	if st.CPUTime <= 0 {
		t.Errorf("Stats: CPU time %v, want > 0 for a running domain", st.CPUTime)
	}
	if s.tg.Caps.RealGuest && st.Memory.ActualKiB == 0 {
		t.Errorf("Stats: memory %+v, want the guest's actual memory", st.Memory)
	}
}
func stepAgent(t *testing.T, s *suite) {
	ctx, cancel := s.tg.ctx()
	defer cancel()
	if s.tg.Caps.Agent && s.tg.Caps.RealGuest {
		// A real guest starts its agent some time after it booted.
		s.eventually(t, "the guest agent answering", func() bool { return s.m.GuestAgentPing(ctx, s.name) == nil })
	}
	err := s.m.GuestAgentPing(ctx, s.name)
	reply, cerr := s.m.GuestAgentCommand(ctx, s.name, `{"execute":"guest-ping"}`, 5*time.Second)
	if !s.tg.Caps.Agent {
		wantErr(t, "GuestAgentPing without an agent", err, domain.ErrAgentUnavailable, s.name)
		wantErr(t, "GuestAgentCommand without an agent", cerr, domain.ErrAgentUnavailable, s.name)
		return
	}
	if err != nil {
		t.Errorf("GuestAgentPing: %v", err)
	}
	if cerr != nil || !strings.Contains(reply, `"return"`) {
		t.Errorf("GuestAgentCommand guest-ping: %q, %v; want a reply with \"return\"", reply, cerr)
	}
}
func stepDevices(t *testing.T, s *suite) {
	ctx, cancel := s.tg.ctx()
	defer cancel()
	both := domain.DeviceLive | domain.DevicePersistent
	err := s.m.AttachDevice(ctx, s.name, s.tg.Disk, both)
	if !s.tg.Caps.Hotplug {
		wantErr(t, "AttachDevice", err, domain.ErrUnsupported, s.name)
		return
	}
	if err != nil {
		t.Fatalf("AttachDevice live+persistent: %v", err)
	}
	dev := s.tg.Disk.Target.Dev
	s.expectDisk(t, dev, false, true)
	s.expectDisk(t, dev, true, true)
	if s.tg.Caps.DeviceEvents {
		s.events.waitFor(t, s.tg.timeout(), func(e domain.Event) bool {
			return e.Domain == s.name && e.Type == domain.EventDeviceAdded
		}, "device-added after a live attach")
	}
	err = s.m.AttachDevice(ctx, s.name, s.tg.Disk, domain.DevicePersistent)
	if err == nil {
		t.Errorf("AttachDevice of a disk with a target in use succeeded")
	}

	if err := s.m.DetachDevice(ctx, s.name, s.tg.Disk, both); err != nil {
		t.Fatalf("DetachDevice live+persistent: %v", err)
	}
	s.expectDisk(t, dev, true, false)
	if s.tg.Caps.DeviceEvents {
		s.events.waitFor(t, s.tg.timeout(), func(e domain.Event) bool {
			return e.Domain == s.name && e.Type == domain.EventDeviceRemoved
		}, "device-removed after a live detach")
	}
	// Live removal completes when the guest lets go of the device.
	s.eventually(t, "disk "+dev+" gone from the running domain", func() bool {
		doc, err := s.m.XML(ctx, s.name, domain.XMLOptions{})
		return err == nil && !hasDisk(doc, dev)
	})
	if err := s.m.AttachDevice(ctx, s.name, nil, domain.DeviceLive); !errors.Is(err, domain.ErrInvalidSpec) {
		t.Errorf("AttachDevice(nil): %v, want ErrInvalidSpec", err)
	}
}

// expectDisk checks that the running (or, inactive, persistent) document
// has, or has not, a disk with target dev.
func (s *suite) expectDisk(t *testing.T, dev string, inactive, want bool) {
	t.Helper()
	ctx, cancel := s.tg.ctx()
	defer cancel()
	doc, err := s.m.XML(ctx, s.name, domain.XMLOptions{Inactive: inactive})
	if err != nil {
		t.Fatalf("XML(inactive=%v): %v", inactive, err)
	}
	if got := hasDisk(doc, dev); got != want {
		t.Errorf("XML(inactive=%v): disk %s present=%v, want %v", inactive, dev, got, want)
	}
}
func hasDisk(doc *libvirtxml.Domain, dev string) bool {
	if doc.Devices == nil {
		return false
	}
	for _, d := range doc.Devices.Disks {
		if d.Target != nil && d.Target.Dev == dev {
			return true
		}
	}
	return false
}
func stepRebootReset(t *testing.T, s *suite) {
	ctx, cancel := s.tg.ctx()
	defer cancel()
	if err := s.m.Reset(ctx, s.name); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if s.tg.Caps.RealGuest {
		s.waitBoot(t)
	}
	expectState(t, s, domain.StateRunning, nil)
	if err := s.m.Reboot(ctx, s.name); err != nil {
		t.Fatalf("Reboot: %v", err)
	}
	if s.tg.Caps.RealGuest {
		s.waitBoot(t)
	}
	s.eventually(t, "running after the reboot", func() bool {
		st, _, err := s.m.State(ctx, s.name)
		return err == nil && st == domain.StateRunning
	})
}
