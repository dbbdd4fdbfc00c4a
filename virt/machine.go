package virt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/go-logr/logr"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/network"
	"github.com/virtkit/virtkit/virt/storage"
)

// Machine is one VMI on one host: its storage, its network and its domain.
// It composes virt/storage, virt/network, virt/domain's conversion and a
// domain Manager; every effect comes through an Option, so a fake can stand
// in for each.
type Machine struct {
	vmi         *virtv1.VirtualMachineInstance
	dom         Domains
	storage     storage.Interface
	pod         storage.Pod
	network     network.Configurator
	planOpts    []network.PlanOption
	host        domain.Host
	convertOpts []domain.Option
	log         logr.Logger
	steps       Steps

	// StoragePlan and NetworkPlan are the plans Start made (plain data:
	// keep them to stop the machine after a restart of the caller).
	StoragePlan storage.Plan
	NetworkPlan network.Plan

	// givenStorage and givenNetwork: WithPlans gave the plans; Start and
	// Adopt do not plan again.
	givenStorage, givenNetwork bool

	name string
	dhcp map[string]network.DHCPServer // by interface
	// unplugging are the interfaces whose NIC UnplugInterface asked the
	// guest to release.
	unplugging map[string]bool
	done       int // how many steps of the chain ran
}

// New returns a Machine for vmi, which should be defaulted and validated
// (virt/spec). It starts nothing.
func New(vmi *virtv1.VirtualMachineInstance, opts ...Option) (*Machine, error) {
	if vmi == nil {
		return nil, errors.New("virt: New: vmi is nil")
	}
	m := &Machine{vmi: vmi.DeepCopy(), log: logr.Discard()}
	for _, o := range opts {
		o(m)
	}
	if m.dom == nil {
		return nil, fmt.Errorf("virt: VMI %s/%s: no domain Manager (virt.WithDomainManager)", vmi.Namespace, vmi.Name)
	}
	if m.storage == nil {
		m.storage = storage.New()
	}
	if m.steps == nil {
		m.steps = DefaultSteps()
	}
	if err := m.steps.check(); err != nil {
		return nil, fmt.Errorf("virt: VMI %s/%s: start-up chain: %w", vmi.Namespace, vmi.Name, err)
	}
	m.name = domain.Name(vmi.Namespace, vmi.Name)
	return m, nil
}

// Started reports whether the machine has steps to undo: Start or Adopt ran
// and Stop has not.
func (m *Machine) Started() bool { return m.done > 0 }

// DomainName is the libvirt name of the VMI's domain (domain.Name).
func (m *Machine) DomainName() string { return m.name }

// Start runs the start-up chain. When a step fails it undoes the steps that
// ran, in reverse order, and returns an error naming the step; the host is
// then as it was before Start.
func (m *Machine) Start(ctx context.Context) error {
	for i, s := range m.steps {
		m.log.V(1).Info("start step", "vmi", m.vmi.Name, "step", s.Name)
		if err := s.Run(ctx, m); err != nil {
			m.done = i
			undoErr := m.undo(context.WithoutCancel(ctx))
			return errors.Join(fmt.Errorf("virt: VMI %s/%s: step %s: %w", m.vmi.Namespace, m.vmi.Name, s.Name, err), undoErr)
		}
	}
	m.done = len(m.steps)
	return nil
}

// Adopt takes over a machine that an earlier process started (a restarted
// node agent): it runs each step's Adopt in order instead of Run, so the
// domain, the network set-up and the storage stay as they are, and what lived
// only in the earlier process (the DHCP servers) runs again here. Give the
// plans the earlier process kept with WithPlans; without them they are made
// again, which is right for storage and for masquerade interfaces but not
// for a bridge binding, whose pod addresses the guest now holds.
//
// Afterwards, also when Adopt fails (the domain is gone, a DHCP server does
// not start), the Machine counts every step as done: Stop undoes them all.
func (m *Machine) Adopt(ctx context.Context) error {
	m.done = len(m.steps)
	for _, s := range m.steps {
		if s.Adopt == nil {
			continue
		}
		m.log.V(1).Info("adopt step", "vmi", m.vmi.Name, "step", s.Name)
		if err := s.Adopt(ctx, m); err != nil {
			return fmt.Errorf("virt: VMI %s/%s: adopt step %s: %w", m.vmi.Namespace, m.vmi.Name, s.Name, err)
		}
	}
	return nil
}

// Release lets go of the machine without stopping it: what runs in this
// process (the DHCP servers) stops, everything else (the domain, the network
// set-up, the disks) stays for another process to Adopt. Stop does nothing
// afterwards.
func (m *Machine) Release() error {
	err := stopDHCP(context.Background(), m)
	m.done = 0
	return err
}

// Stop ends the machine: an ACPI shutdown with up to grace for the guest to
// power off, then destroy, then every start step undone in reverse order
// (domain undefined, DHCP stopped, network torn down, storage released).
func (m *Machine) Stop(ctx context.Context, grace time.Duration) error {
	if m.done == 0 {
		return nil
	}
	if st, _, err := m.dom.State(ctx, m.name); err == nil && st != domain.StateShutoff {
		if err := m.dom.Shutdown(ctx, m.name); err == nil {
			m.waitShutoff(ctx, grace)
		}
	}
	return m.undo(ctx)
}

func (m *Machine) waitShutoff(ctx context.Context, grace time.Duration) {
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		st, _, err := m.dom.State(ctx, m.name)
		if err != nil || st == domain.StateShutoff {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// undo takes back the steps that ran, last first, and reports every failure.
func (m *Machine) undo(ctx context.Context) error {
	var errs []error
	for i := m.done - 1; i >= 0; i-- {
		s := m.steps[i]
		if s.Undo == nil {
			continue
		}
		if err := s.Undo(ctx, m); err != nil {
			errs = append(errs, fmt.Errorf("virt: VMI %s/%s: undo %s: %w", m.vmi.Namespace, m.vmi.Name, s.Name, err))
		}
	}
	m.done = 0
	return errors.Join(errs...)
}

// Status reads the domain's state and maps it to the VMI's phase, reason
// and conditions.
func (m *Machine) Status(ctx context.Context) (domain.VMIStatus, error) {
	st, reason, err := m.dom.State(ctx, m.name)
	if err != nil {
		return domain.VMIStatus{}, fmt.Errorf("virt: VMI %s/%s: %w", m.vmi.Namespace, m.vmi.Name, err)
	}
	return domain.Status(m.vmi, &domain.DomainState{State: st, Reason: reason}), nil
}

func sortedKeys[V any](plan map[string]V) []string {
	keys := make([]string, 0, len(plan))
	for k := range plan {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return slices.Clip(keys)
}
