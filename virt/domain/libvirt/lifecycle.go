package libvirt

import (
	"context"
	"sort"
	"strings"

	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
)

// Operation names, as errors report them.
const (
	opDefine       = domain.OpDefine
	opStart        = domain.OpStart
	opShutdown     = domain.OpShutdown
	opDestroy      = domain.OpDestroy
	opReboot       = domain.OpReboot
	opReset        = domain.OpReset
	opPause        = domain.OpPause
	opResume       = domain.OpResume
	opUndefine     = domain.OpUndefine
	opState        = domain.OpState
	opXML          = domain.OpXML
	opList         = domain.OpList
	opStats        = domain.OpStats
	opAttach       = domain.OpAttachDevice
	opDetach       = domain.OpDetachDevice
	opAgentPing    = domain.OpGuestAgentPing
	opAgentCommand = domain.OpGuestAgentCommand
	opConsole      = domain.OpConsole
)

// Define makes doc a persistent domain; see domain.Manager.Define.
func (m *Manager) Define(ctx context.Context, doc *libvirtxml.Domain) error {
	if doc == nil {
		return &domain.Error{Op: opDefine, Kind: domain.ErrInvalidSpec, Message: "no domain document"}
	}
	xml, err := doc.Marshal()
	if err != nil {
		return &domain.Error{Op: opDefine, Domain: doc.Name, Kind: domain.ErrInvalidSpec, Message: err.Error(), Err: err}
	}
	return m.call(ctx, opDefine, doc.Name, func(c *libvirt.Connect) error {
		// libvirt's define replaces a definition of the same name and UUID
		// without a word; Define promises never to, so it looks first.
		if doc.Name != "" {
			if d, err := c.LookupDomainByName(doc.Name); err == nil {
				d.Free()
				return &domain.Error{Op: opDefine, Domain: doc.Name, Kind: domain.ErrAlreadyExists,
					Message: "a domain named " + doc.Name + " is already defined; undefine it first"}
			}
		}
		d, err := c.DomainDefineXML(xml)
		if err != nil {
			return err
		}
		return d.Free()
	})
}

// Start boots a defined domain; see domain.Manager.Start.
func (m *Manager) Start(ctx context.Context, name string, opts domain.StartOptions) error {
	var flags libvirt.DomainCreateFlags
	if opts.Paused {
		flags |= libvirt.DOMAIN_START_PAUSED
	}
	return m.onDomain(ctx, opStart, name, func(d *libvirt.Domain) error { return d.CreateWithFlags(flags) })
}

// Shutdown presses the ACPI power button; see domain.Manager.Shutdown.
func (m *Manager) Shutdown(ctx context.Context, name string) error {
	return m.onDomain(ctx, opShutdown, name, func(d *libvirt.Domain) error {
		err := d.ShutdownFlags(libvirt.DOMAIN_SHUTDOWN_ACPI_POWER_BTN)
		if unsupportedFlags(err) {
			// Drivers that do not let the caller choose the method (test:///)
			// shut down their own graceful way.
			err = d.Shutdown()
		}
		return err
	})
}

// Destroy powers the domain off at once; see domain.Manager.Destroy.
func (m *Manager) Destroy(ctx context.Context, name string) error {
	return m.onDomain(ctx, opDestroy, name, func(d *libvirt.Domain) error { return d.Destroy() })
}

// Reboot asks the guest to reboot through ACPI; see domain.Manager.Reboot.
func (m *Manager) Reboot(ctx context.Context, name string) error {
	return m.onDomain(ctx, opReboot, name, func(d *libvirt.Domain) error {
		err := d.Reboot(libvirt.DOMAIN_REBOOT_ACPI_POWER_BTN)
		if unsupportedFlags(err) {
			err = d.Reboot(0)
		}
		return err
	})
}

// Reset presses the reset button; see domain.Manager.Reset.
func (m *Manager) Reset(ctx context.Context, name string) error {
	return m.onDomain(ctx, opReset, name, func(d *libvirt.Domain) error { return d.Reset(0) })
}

// Pause stops the vCPUs; see domain.Manager.Pause.
func (m *Manager) Pause(ctx context.Context, name string) error {
	return m.onDomain(ctx, opPause, name, func(d *libvirt.Domain) error { return d.Suspend() })
}

// Resume runs a paused domain again; see domain.Manager.Resume.
func (m *Manager) Resume(ctx context.Context, name string) error {
	return m.onDomain(ctx, opResume, name, func(d *libvirt.Domain) error { return d.Resume() })
}

// Undefine removes the persistent definition; see domain.Manager.Undefine.
func (m *Manager) Undefine(ctx context.Context, name string) error {
	return m.onDomain(ctx, opUndefine, name, func(d *libvirt.Domain) error {
		// Say what becomes of what would otherwise make libvirt refuse:
		// the NVRAM is kept (persistent EFI variables live in backend
		// storage), a managed save image is removed.
		err := d.UndefineFlags(libvirt.DOMAIN_UNDEFINE_KEEP_NVRAM | libvirt.DOMAIN_UNDEFINE_MANAGED_SAVE)
		if le, ok := err.(libvirt.Error); (ok && le.Code == libvirt.ERR_NO_SUPPORT) || unsupportedFlags(err) {
			// Drivers that know neither flag.
			err = d.Undefine()
		}
		return err
	})
}

// State reports the domain's state and reason; see domain.Manager.State.
func (m *Manager) State(ctx context.Context, name string) (domain.State, domain.Reason, error) {
	var s libvirt.DomainState
	var r int
	err := m.onDomain(ctx, opState, name, func(d *libvirt.Domain) error {
		var err error
		s, r, err = d.GetState()
		return err
	})
	if err != nil {
		return domain.StateNoState, domain.ReasonUnknown, err
	}
	return domain.State(s), domain.Reason(r), nil
}

// XML returns the domain's document; see domain.Manager.XML.
func (m *Manager) XML(ctx context.Context, name string, opts domain.XMLOptions) (*libvirtxml.Domain, error) {
	var flags libvirt.DomainXMLFlags
	if opts.Inactive {
		flags |= libvirt.DOMAIN_XML_INACTIVE
	}
	var text string
	err := m.onDomain(ctx, opXML, name, func(d *libvirt.Domain) error {
		var err error
		text, err = d.GetXMLDesc(flags)
		return err
	})
	if err != nil {
		return nil, err
	}
	doc := &libvirtxml.Domain{}
	if err := doc.Unmarshal(text); err != nil {
		return nil, &domain.Error{Op: opXML, Domain: name, Message: "parsing libvirt's document: " + err.Error(), Err: err}
	}
	return doc, nil
}

// List reports every domain; see domain.Manager.List.
func (m *Manager) List(ctx context.Context) ([]domain.Info, error) {
	var out []domain.Info
	err := m.call(ctx, opList, "", func(c *libvirt.Connect) error {
		doms, err := c.ListAllDomains(0)
		if err != nil {
			return err
		}
		defer func() {
			for i := range doms {
				doms[i].Free()
			}
		}()
		for i := range doms {
			info, err := describe(&doms[i])
			if err != nil {
				// A domain undefined since the listing is not an error.
				if le, ok := err.(libvirt.Error); ok && le.Code == libvirt.ERR_NO_DOMAIN {
					continue
				}
				return err
			}
			out = append(out, info)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func describe(d *libvirt.Domain) (domain.Info, error) {
	name, err := d.GetName()
	if err != nil {
		return domain.Info{}, err
	}
	uuid, err := d.GetUUIDString()
	if err != nil {
		return domain.Info{}, err
	}
	persistent, err := d.IsPersistent()
	if err != nil {
		return domain.Info{}, err
	}
	s, r, err := d.GetState()
	if err != nil {
		return domain.Info{}, err
	}
	return domain.Info{Name: name, UUID: uuid, Persistent: persistent, State: domain.State(s), Reason: domain.Reason(r)}, nil
}

// unsupportedFlags reports libvirt's refusal of a flag the driver does not
// implement, as opposed to a failure of the operation itself.
func unsupportedFlags(err error) bool {
	le, ok := err.(libvirt.Error)
	return ok && le.Code == libvirt.ERR_INVALID_ARG && strings.Contains(le.Message, "unsupported flags")
}
