package fake

import (
	"context"
	"sort"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
)

// Define stores doc as a persistent, shut-off domain; see domain.Manager.Define.
func (m *Manager) Define(ctx context.Context, doc *libvirtxml.Domain) error {
	name := ""
	if doc != nil {
		name = doc.Name
	}
	if err := m.enter(ctx, domain.OpDefine, name); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if msg := validate(doc); msg != "" {
		return &domain.Error{Op: domain.OpDefine, Domain: name, Kind: domain.ErrInvalidSpec, Message: msg}
	}
	if _, ok := m.domains[name]; ok {
		return &domain.Error{Op: domain.OpDefine, Domain: name, Kind: domain.ErrAlreadyExists,
			Message: "a domain named " + name + " is already defined; undefine it first"}
	}
	cfg, err := copyDoc(doc)
	if err != nil {
		return &domain.Error{Op: domain.OpDefine, Domain: name, Kind: domain.ErrInvalidSpec, Message: err.Error(), Err: err}
	}
	uuid := cfg.UUID
	if uuid == "" {
		uuid = m.newUUID()
		cfg.UUID = uuid
	}
	for other, d := range m.domains {
		if d.uuid == uuid {
			return &domain.Error{Op: domain.OpDefine, Domain: name, Kind: domain.ErrAlreadyExists,
				Message: "domain '" + other + "' is already defined with uuid " + uuid}
		}
	}
	m.domains[name] = &fakeDomain{config: cfg, uuid: uuid, persistent: true, state: domain.StateShutoff}
	m.eventLocked(name, domain.EventDefined, domain.DetailDefinedAdded, "")
	return nil
}

// validate checks what libvirt's parser checks first, with libvirt's
// messages; it is no schema validation.
func validate(doc *libvirtxml.Domain) string {
	switch {
	case doc == nil:
		return "no domain document"
	case doc.Name == "":
		return "XML error: missing domain name information"
	case strings.Contains(doc.Name, "/"):
		return "XML error: name " + doc.Name + " cannot contain '/'"
	case doc.Type == "":
		return "XML error: missing domain type attribute"
	case doc.Type != "qemu" && doc.Type != "kvm" && doc.Type != "test":
		return "unsupported configuration: invalid domain type " + doc.Type
	case doc.Memory == nil || doc.Memory.Value == 0:
		return "XML error: Memory size must be specified via <memory> or in the <numa> configuration"
	}
	return ""
}

// Start boots a shut-off domain; see domain.Manager.Start.
func (m *Manager) Start(ctx context.Context, name string, opts domain.StartOptions) error {
	return m.onDomain(ctx, domain.OpStart, name, func(d *fakeDomain) error {
		if d.live != nil {
			return invalidState(domain.OpStart, name, "domain is already running")
		}
		live, err := copyDoc(d.config)
		if err != nil {
			return &domain.Error{Op: domain.OpStart, Domain: name, Err: err}
		}
		id := 1
		live.ID = &id
		d.live = live
		d.started = m.now()
		d.state, d.reason = domain.StateRunning, domain.ReasonRunningBooted
		m.eventLocked(name, domain.EventStarted, domain.DetailStartedBooted, "")
		if opts.Paused {
			d.state, d.reason = domain.StatePaused, domain.ReasonPausedUser
			m.eventLocked(name, domain.EventSuspended, domain.DetailSuspendedPaused, "")
		}
		return nil
	})
}

// Shutdown presses the power button: a guest that honours ACPI powers off
// at once (shut-off, reason shutdown); see domain.Manager.Shutdown.
func (m *Manager) Shutdown(ctx context.Context, name string) error {
	return m.onDomain(ctx, domain.OpShutdown, name, func(d *fakeDomain) error {
		if d.state != domain.StateRunning {
			return invalidState(domain.OpShutdown, name, "domain is not running")
		}
		if d.ignoreACPI {
			return nil
		}
		// QEMU reports the guest's own power-off as a shutdown event first.
		m.eventLocked(name, domain.EventShutdown, domain.DetailShutdownGuest, "")
		m.stopLocked(name, d, domain.ReasonShutoffShutdown, domain.DetailStoppedShutdown)
		return nil
	})
}

// Destroy powers the domain off at once; see domain.Manager.Destroy.
func (m *Manager) Destroy(ctx context.Context, name string) error {
	return m.onDomain(ctx, domain.OpDestroy, name, func(d *fakeDomain) error {
		if d.live == nil {
			return invalidState(domain.OpDestroy, name, "domain is not running")
		}
		m.stopLocked(name, d, domain.ReasonShutoffDestroyed, domain.DetailStoppedDestroyed)
		return nil
	})
}

// stopLocked shuts d off; a transient domain disappears.
func (m *Manager) stopLocked(name string, d *fakeDomain, reason domain.Reason, detail int) {
	d.live = nil
	d.state, d.reason = domain.StateShutoff, reason
	if d.console != nil {
		d.input = append(d.input, d.console.takeInput()...)
		d.console.hangup()
		d.console = nil
	}
	m.eventLocked(name, domain.EventStopped, detail, "")
	if !d.persistent {
		delete(m.domains, name)
	}
}

// Reboot restarts a guest that honours ACPI; see domain.Manager.Reboot.
func (m *Manager) Reboot(ctx context.Context, name string) error {
	return m.onDomain(ctx, domain.OpReboot, name, func(d *fakeDomain) error {
		if d.state != domain.StateRunning {
			return invalidState(domain.OpReboot, name, "domain is not running")
		}
		if !d.ignoreACPI {
			m.eventLocked(name, domain.EventReboot, 0, "")
		}
		return nil
	})
}

// Reset restarts the guest at once; see domain.Manager.Reset.
func (m *Manager) Reset(ctx context.Context, name string) error {
	return m.onDomain(ctx, domain.OpReset, name, func(d *fakeDomain) error {
		if d.live == nil {
			return invalidState(domain.OpReset, name, "domain is not running")
		}
		m.eventLocked(name, domain.EventReboot, 0, "")
		return nil
	})
}

// Pause stops the vCPUs; see domain.Manager.Pause.
func (m *Manager) Pause(ctx context.Context, name string) error {
	return m.onDomain(ctx, domain.OpPause, name, func(d *fakeDomain) error {
		if d.live == nil {
			return invalidState(domain.OpPause, name, "domain is not running")
		}
		if d.state != domain.StatePaused {
			d.state, d.reason = domain.StatePaused, domain.ReasonPausedUser
			m.eventLocked(name, domain.EventSuspended, domain.DetailSuspendedPaused, "")
		}
		return nil
	})
}

// Resume runs a paused domain again; see domain.Manager.Resume.
func (m *Manager) Resume(ctx context.Context, name string) error {
	return m.onDomain(ctx, domain.OpResume, name, func(d *fakeDomain) error {
		if d.state != domain.StatePaused {
			return invalidState(domain.OpResume, name, "domain is not paused")
		}
		d.state, d.reason = domain.StateRunning, domain.ReasonRunningUnpaused
		m.eventLocked(name, domain.EventResumed, domain.DetailResumedUnpaused, "")
		return nil
	})
}

// Undefine removes the definition; a running domain becomes transient; see
// domain.Manager.Undefine.
func (m *Manager) Undefine(ctx context.Context, name string) error {
	return m.onDomain(ctx, domain.OpUndefine, name, func(d *fakeDomain) error {
		if !d.persistent {
			return invalidState(domain.OpUndefine, name, "cannot undefine transient domain")
		}
		if d.live == nil {
			delete(m.domains, name)
		} else {
			d.persistent = false
		}
		m.eventLocked(name, domain.EventUndefined, 0, "")
		return nil
	})
}

// State reports state and reason; see domain.Manager.State.
func (m *Manager) State(ctx context.Context, name string) (domain.State, domain.Reason, error) {
	var s domain.State
	var r domain.Reason
	err := m.onDomain(ctx, domain.OpState, name, func(d *fakeDomain) error {
		s, r = d.state, d.reason
		return nil
	})
	return s, r, err
}

// XML returns a copy of the live or persistent document; see domain.Manager.XML.
func (m *Manager) XML(ctx context.Context, name string, opts domain.XMLOptions) (*libvirtxml.Domain, error) {
	var out *libvirtxml.Domain
	err := m.onDomain(ctx, domain.OpXML, name, func(d *fakeDomain) error {
		doc := d.live
		if doc == nil || opts.Inactive {
			doc = d.config
		}
		var err error
		out, err = copyDoc(doc)
		return err
	})
	return out, err
}

// List reports every domain sorted by name; see domain.Manager.List.
func (m *Manager) List(ctx context.Context) ([]domain.Info, error) {
	if err := m.enter(ctx, domain.OpList, ""); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := make([]domain.Info, 0, len(m.domains))
	for name, d := range m.domains {
		out = append(out, domain.Info{Name: name, UUID: d.uuid, Persistent: d.persistent, State: d.state, Reason: d.reason})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
