package domaintest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
)

// step is one stage of the contract. Steps run in order on one domain; a
// failed step ends the run, since the later ones build on it.
type step struct {
	name string
	run  func(t *testing.T, s *suite)
	// realGuest marks a step that reads what a booted guest prints: it is
	// part of the suite only on targets that boot one.
	realGuest bool
}

// suite is the state the steps share.
type suite struct {
	tg     Target
	m      domain.Manager
	name   string // the domain the suite drives
	events *recorder
	boots  int // boot markers seen so far on a real guest
}

// Run runs the contract against the Target newTarget returns.
func Run(t *testing.T, newTarget func(t *testing.T) Target) {
	tg := newTarget(t)
	s := &suite{tg: tg, m: tg.Manager, name: domainName(t)}
	t.Cleanup(func() {
		// Leave nothing behind on a shared hypervisor (test:///default
		// lives as long as the process), even after a failed step.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.m.Destroy(ctx, s.name)
		_ = s.m.Undefine(ctx, s.name)
		_ = s.m.Close()
	})
	for _, st := range steps() {
		if st.realGuest && !tg.Caps.RealGuest || st.name == "resize" && !tg.Caps.Resize || st.name == "media" && !tg.Caps.MediaChange {
			continue
		}
		if !t.Run(st.name, func(t *testing.T) { st.run(t, s) }) {
			t.Fatalf("step %q failed; the later steps build on it", st.name)
		}
	}
}

func steps() []step {
	return []step{
		{"subscribe", stepSubscribe, false},
		{"define", stepDefine, false},
		{"define-again", stepDefineAgain, false},
		{"hotplug-ports", stepHotplugPorts, false},
		{"invalid-spec", stepInvalidSpec, false},
		{"not-found", stepNotFound, false},
		{"start", stepStart, false},
		{"boot-marker", stepBootMarker, true},
		{"console", stepConsole, false},
		{"screenshot", stepScreenshot, false},
		{"pause-resume", stepPauseResume, false},
		{"stats", stepStats, false},
		{"guest-agent", stepAgent, false},
		{"devices", stepDevices, false},
		{"resize", stepResize, false},
		{"media", stepMedia, false},
		{"reboot-reset", stepRebootReset, false},
		{"shutdown", stepShutdown, false},
		{"start-destroy", stepStartDestroy, false},
		{"start-paused", stepStartPaused, false},
		{"invalid-state", stepInvalidState, false},
		{"deadline", stepDeadline, false},
		{"undefine", stepUndefine, false},
		{"events-in-order", stepEventsInOrder, false},
		{"close", stepClose, false},
	}
}

// domainName derives a name from the test's, unique within one process
// (test:///default is shared by every test of a package).
func domainName(t *testing.T) string {
	r := strings.NewReplacer("/", "-", " ", "-", "_", "-")
	return "domaintest-" + strings.ToLower(r.Replace(t.Name()))
}

func stepSubscribe(t *testing.T, s *suite) {
	// The subscription lasts the whole run; the close step checks that
	// Close ends it.
	ch, err := s.m.Events(context.Background())
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	s.events = record(ch)
}

func stepDefine(t *testing.T, s *suite) {
	ctx, cancel := s.tg.ctx()
	defer cancel()
	if err := s.m.Define(ctx, s.tg.Domain(s.name)); err != nil {
		t.Fatalf("Define: %v", err)
	}
	expectState(t, s, domain.StateShutoff, nil)
	list, err := s.m.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	found := false
	for _, info := range list {
		if info.Name == s.name {
			found = true
			if !info.Persistent || info.State != domain.StateShutoff || info.UUID == "" {
				t.Errorf("List entry %+v: want persistent, shut off, with a UUID", info)
			}
		}
	}
	if !found {
		t.Errorf("List %v lacks %s", list, s.name)
	}
}

func stepDefineAgain(t *testing.T, s *suite) {
	ctx, cancel := s.tg.ctx()
	defer cancel()
	err := s.m.Define(ctx, s.tg.Domain(s.name))
	wantErr(t, "Define of an existing name", err, domain.ErrAlreadyExists, s.name)
}

// stepHotplugPorts gives the defined domain the empty PCIe root ports
// domain.HotplugPorts asks for, attached to its definition one by one as
// virt does after a define; the same port twice is refused.
func stepHotplugPorts(t *testing.T, s *suite) {
	if !s.tg.Caps.Hotplug {
		return
	}
	ctx, cancel := s.tg.ctx()
	defer cancel()
	doc, err := s.m.XML(ctx, s.name, domain.XMLOptions{Inactive: true})
	if err != nil {
		t.Fatalf("XML(inactive): %v", err)
	}
	ports := domain.HotplugPorts(doc)
	if len(ports) == 0 {
		return // not a q35 machine
	}
	before := rootPorts(doc)
	for i := range ports {
		if err := s.m.AttachDevice(ctx, s.name, &ports[i], domain.DevicePersistent); err != nil {
			t.Fatalf("AttachDevice of root port %d: %v", *ports[i].Index, err)
		}
	}
	if err := s.m.AttachDevice(ctx, s.name, &ports[0], domain.DevicePersistent); err == nil {
		t.Errorf("AttachDevice of root port %d twice succeeded", *ports[0].Index)
	}
	if doc, err = s.m.XML(ctx, s.name, domain.XMLOptions{Inactive: true}); err != nil {
		t.Fatalf("XML(inactive): %v", err)
	}
	if got := rootPorts(doc); got != before+len(ports) {
		t.Errorf("%d root ports after adding %d to %d", got, len(ports), before)
	}
}

func rootPorts(doc *libvirtxml.Domain) int {
	n := 0
	if doc.Devices != nil {
		for _, c := range doc.Devices.Controllers {
			if c.Type == "pci" && c.Model == "pcie-root-port" {
				n++
			}
		}
	}
	return n
}

func stepInvalidSpec(t *testing.T, s *suite) {
	ctx, cancel := s.tg.ctx()
	defer cancel()
	bad := s.tg.Domain("domaintest/bad")
	err := s.m.Define(ctx, bad)
	wantErr(t, "Define of a name with a slash", err, domain.ErrInvalidSpec, "domaintest/bad")
	var de *domain.Error
	if errors.As(err, &de) && !strings.Contains(de.Message, "cannot contain '/'") {
		t.Errorf("Define: Message %q does not carry the hypervisor's reason (cannot contain '/')", de.Message)
	}
	noMem := s.tg.Domain(s.name + "-nomem")
	noMem.Memory = nil
	err = s.m.Define(ctx, noMem)
	wantErr(t, "Define without memory", err, domain.ErrInvalidSpec, s.name+"-nomem")
}

func stepNotFound(t *testing.T, s *suite) {
	ctx, cancel := s.tg.ctx()
	defer cancel()
	missing := s.name + "-missing"
	calls := map[string]func() error{
		"Start":    func() error { return s.m.Start(ctx, missing, domain.StartOptions{}) },
		"Shutdown": func() error { return s.m.Shutdown(ctx, missing) },
		"Destroy":  func() error { return s.m.Destroy(ctx, missing) },
		"Pause":    func() error { return s.m.Pause(ctx, missing) },
		"Resume":   func() error { return s.m.Resume(ctx, missing) },
		"Reboot":   func() error { return s.m.Reboot(ctx, missing) },
		"Reset":    func() error { return s.m.Reset(ctx, missing) },
		"Undefine": func() error { return s.m.Undefine(ctx, missing) },
		"State":    func() error { _, _, err := s.m.State(ctx, missing); return err },
		"XML":      func() error { _, err := s.m.XML(ctx, missing, domain.XMLOptions{}); return err },
		"Stats":    func() error { _, err := s.m.Stats(ctx, missing); return err },
		"Console":  func() error { _, err := s.m.Console(ctx, missing); return err },
		"Attach": func() error {
			return s.m.AttachDevice(ctx, missing, s.tg.Disk, domain.DevicePersistent)
		},
		"Ping": func() error { return s.m.GuestAgentPing(ctx, missing) },
	}
	for what, call := range calls {
		wantErr(t, what+" of a missing domain", call(), domain.ErrNotFound, missing)
	}
}

func stepStart(t *testing.T, s *suite) {
	ctx, cancel := s.tg.ctx()
	defer cancel()
	if err := s.m.Start(ctx, s.name, domain.StartOptions{}); err != nil {
		t.Fatalf("Start: %v", err)
	}
	booted := domain.ReasonRunningBooted
	expectState(t, s, domain.StateRunning, &booted)
	err := s.m.Start(ctx, s.name, domain.StartOptions{})
	wantErr(t, "Start of a running domain", err, domain.ErrInvalidState, s.name)
}

func stepBootMarker(t *testing.T, s *suite) {
	s.waitBoot(t)
}

// waitBoot waits for one more boot marker, then for the ready line that
// follows it.
func (s *suite) waitBoot(t *testing.T) {
	t.Helper()
	s.boots++
	line := s.waitLines(t, s.tg.Booted, s.boots)
	t.Logf("console: %s", line)
	if s.tg.Ready != nil {
		s.waitLines(t, s.tg.Ready, s.boots)
	}
}

// waitLines waits until the console log has n lines matching re and
// returns the last.
func (s *suite) waitLines(t *testing.T, re interface{ FindAllString(string, int) []string }, n int) string {
	t.Helper()
	deadline := time.Now().Add(s.tg.timeout())
	for {
		log, err := s.tg.ConsoleLog(s.name)
		if err == nil {
			if m := re.FindAllString(log, -1); len(m) >= n {
				return m[len(m)-1]
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("console: fewer than %d lines matching %v after %s; log ends:\n%s", n, re, s.tg.timeout(), tail(log, 15))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func stepPauseResume(t *testing.T, s *suite) {
	ctx, cancel := s.tg.ctx()
	defer cancel()
	if err := s.m.Pause(ctx, s.name); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	user := domain.ReasonPausedUser
	expectState(t, s, domain.StatePaused, &user)
	if err := s.m.Resume(ctx, s.name); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	unpaused := domain.ReasonRunningUnpaused
	expectState(t, s, domain.StateRunning, &unpaused)
}

func stepShutdown(t *testing.T, s *suite) {
	ctx, cancel := s.tg.ctx()
	defer cancel()
	if err := s.m.Shutdown(ctx, s.name); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if !s.tg.Caps.ACPIShutdown {
		if err := s.m.Destroy(ctx, s.name); err != nil {
			t.Fatalf("Destroy after an ignored shutdown: %v", err)
		}
		return
	}
	s.eventually(t, "shut off after the ACPI shutdown", func() bool {
		st, _, err := s.m.State(ctx, s.name)
		return err == nil && st == domain.StateShutoff
	})
	shutdown := domain.ReasonShutoffShutdown
	expectState(t, s, domain.StateShutoff, &shutdown)
}

func stepStartDestroy(t *testing.T, s *suite) {
	ctx, cancel := s.tg.ctx()
	defer cancel()
	if err := s.m.Start(ctx, s.name, domain.StartOptions{}); err != nil {
		t.Fatalf("Start after shutdown: %v", err)
	}
	expectState(t, s, domain.StateRunning, nil)
	if err := s.m.Destroy(ctx, s.name); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	destroyed := domain.ReasonShutoffDestroyed
	expectState(t, s, domain.StateShutoff, &destroyed)
}

func stepStartPaused(t *testing.T, s *suite) {
	ctx, cancel := s.tg.ctx()
	defer cancel()
	err := s.m.Start(ctx, s.name, domain.StartOptions{Paused: true})
	if !s.tg.Caps.StartPaused {
		wantErr(t, "Start paused", err, domain.ErrUnsupported, s.name)
		expectState(t, s, domain.StateShutoff, nil)
		return
	}
	if err != nil {
		t.Fatalf("Start paused: %v", err)
	}
	expectState(t, s, domain.StatePaused, nil)
	if err := s.m.Resume(ctx, s.name); err != nil {
		t.Fatalf("Resume after a paused start: %v", err)
	}
	expectState(t, s, domain.StateRunning, nil)
	if err := s.m.Destroy(ctx, s.name); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	expectState(t, s, domain.StateShutoff, nil)
}

func stepInvalidState(t *testing.T, s *suite) {
	ctx, cancel := s.tg.ctx()
	defer cancel()
	wantErr(t, "Pause of a shut-off domain", s.m.Pause(ctx, s.name), domain.ErrInvalidState, s.name)
	wantErr(t, "Resume of a shut-off domain", s.m.Resume(ctx, s.name), domain.ErrInvalidState, s.name)
	wantErr(t, "Destroy of a shut-off domain", s.m.Destroy(ctx, s.name), domain.ErrInvalidState, s.name)
}

func stepDeadline(t *testing.T, s *suite) {
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, _, err := s.m.State(expired, s.name)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("State with an expired context: %v, want context.DeadlineExceeded", err)
	}
	if s.tg.Block == nil {
		return
	}
	unblock := s.tg.Block()
	defer unblock()
	const limit = 500 * time.Millisecond
	ctx, cancel2 := context.WithTimeout(context.Background(), limit)
	defer cancel2()
	begin := time.Now()
	_, _, err = s.m.State(ctx, s.name)
	took := time.Since(begin)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("State on a blocked hypervisor: %v, want context.DeadlineExceeded", err)
	}
	if took > limit+time.Second {
		t.Errorf("State on a blocked hypervisor returned after %v; the deadline was %v", took, limit)
	}
	unblock()
	// The Manager is usable once the hypervisor answers again.
	ctx3, cancel3 := s.tg.ctx()
	defer cancel3()
	s.eventually(t, "State works after the hypervisor answers again", func() bool {
		_, _, err := s.m.State(ctx3, s.name)
		return err == nil
	})
}

func stepUndefine(t *testing.T, s *suite) {
	ctx, cancel := s.tg.ctx()
	defer cancel()
	if err := s.m.Undefine(ctx, s.name); err != nil {
		t.Fatalf("Undefine: %v", err)
	}
	_, _, err := s.m.State(ctx, s.name)
	wantErr(t, "State after Undefine", err, domain.ErrNotFound, s.name)
	list, err := s.m.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, info := range list {
		if info.Name == s.name {
			t.Errorf("List still has %s after Undefine", s.name)
		}
	}
}

func stepClose(t *testing.T, s *suite) {
	if err := s.m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx, cancel := s.tg.ctx()
	defer cancel()
	_, err := s.m.List(ctx)
	if !errors.Is(err, domain.ErrClosed) {
		t.Errorf("List after Close: %v, want ErrClosed", err)
	}
	s.events.waitClosed(t, s.tg.timeout())
}

// expectState checks the domain's state, and its reason when reason is set.
func expectState(t *testing.T, s *suite, want domain.State, reason *domain.Reason) {
	t.Helper()
	ctx, cancel := s.tg.ctx()
	defer cancel()
	st, r, err := s.m.State(ctx, s.name)
	if err != nil {
		t.Fatalf("State: %v", err)
	}
	if st != want || (reason != nil && r != *reason) {
		wantR := "any"
		if reason != nil {
			wantR = domain.ReasonString(want, *reason)
		}
		t.Fatalf("State: %v (%s), want %v (%s)", st, domain.ReasonString(st, r), want, wantR)
	}
}

// wantErr checks that err matches the sentinel and names the domain.
func wantErr(t *testing.T, what string, err, sentinel error, name string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Errorf("%s: %v, want %v", what, err, sentinel)
		return
	}
	if !strings.Contains(err.Error(), name) {
		t.Errorf("%s: %q does not name the domain %s", what, err, name)
	}
}

// eventually polls cond until it holds or the target's timeout passes.
func (s *suite) eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(s.tg.timeout())
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s after %s", what, s.tg.timeout())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
