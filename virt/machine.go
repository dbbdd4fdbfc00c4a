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
	dom         domain.Manager
	storage     storage.Interface
	pod         storage.Pod
	network     network.Configurator
	planOpts    []network.PlanOption
	host        domain.Host
	convertOpts []domain.Option
	log         logr.Logger
	steps       []Step

	// StoragePlan and NetworkPlan are the plans Start made (plain data:
	// keep them to stop the machine after a restart of the caller).
	StoragePlan storage.Plan
	NetworkPlan network.Plan

	name string
	dhcp []network.DHCPServer
	done int // how many steps of the chain ran
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
	m.name = vmi.Namespace + "_" + vmi.Name
	return m, nil
}

// DomainName is the libvirt name of the VMI's domain (namespace_name).
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
