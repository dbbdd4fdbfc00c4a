package virt

import (
	"context"
	"errors"
	"fmt"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/network"
)

// Step is one named link of a Machine's start-up chain. Run does the work;
// Undo, when set, takes back what Run did: Start calls it, in reverse order,
// for the steps that ran when a later step fails, and Stop calls it for all
// of them, so nothing is left half-made. Adopt, when set, is what Machine.Adopt
// runs instead of Run for a machine that an earlier process started: it takes
// up again what lived only in that process (a DHCP server) or checks that the
// step's effect is still there, and must not redo the effect itself.
type Step struct {
	Name  string
	Run   func(ctx context.Context, m *Machine) error
	Undo  func(ctx context.Context, m *Machine) error
	Adopt func(ctx context.Context, m *Machine) error
}

// Names of the default steps, for finding them in the chain.
const (
	StepPlanStorage    = "plan-storage"
	StepPrepareStorage = "prepare-storage"
	StepPlanNetwork    = "plan-network"
	StepSetupNetwork   = "setup-network"
	StepStartDHCP      = "start-dhcp"
	StepDefine         = "define"
	StepStart          = "start"
)

// DefaultSteps is the start-up chain: plan and prepare storage, discover the
// pod's interfaces and plan the network, set it up and start a DHCP server
// per interface, convert and define the domain, start it. The chain is new
// on every call: edit it by name (Steps.InsertAfter, Replace, Remove, ...)
// and pass it to WithSteps.
func DefaultSteps() Steps {
	return Steps{
		{Name: StepPlanStorage, Run: planStorage, Adopt: planStorage},
		{Name: StepPrepareStorage, Run: prepareStorage, Undo: releaseStorage},
		{Name: StepPlanNetwork, Run: planNetwork, Adopt: planNetwork},
		{Name: StepSetupNetwork, Run: setupNetwork, Undo: teardownNetwork},
		{Name: StepStartDHCP, Run: startDHCP, Undo: stopDHCP, Adopt: restartDHCP},
		{Name: StepDefine, Run: define, Undo: undefine, Adopt: domainExists},
		{Name: StepStart, Run: start, Undo: stopDomain},
	}
}

// planStorage plans the VMI's disks, unless WithPlans gave the plan.
func planStorage(ctx context.Context, m *Machine) error {
	if m.givenStorage {
		return nil
	}
	p, err := m.storage.Plan(ctx, m.vmi, m.pod)
	if err != nil {
		return err
	}
	m.StoragePlan = p
	return nil
}

func prepareStorage(ctx context.Context, m *Machine) error {
	return m.storage.Prepare(ctx, m.vmi, m.pod, m.StoragePlan)
}

func releaseStorage(ctx context.Context, m *Machine) error {
	return m.storage.Release(ctx, m.StoragePlan)
}

// planNetwork discovers the pod's interfaces and plans the guest's NICs,
// unless WithPlans gave the plan: a bridge binding moves the pod
// interface's addresses to the guest, so a second discovery would not find them.
func planNetwork(ctx context.Context, m *Machine) error {
	if m.givenNetwork {
		return nil
	}
	ifaces := m.vmi.Spec.Domain.Devices.Interfaces
	if len(ifaces) == 0 {
		m.NetworkPlan = network.Plan{}
		return nil
	}
	if m.network == nil {
		return fmt.Errorf("spec.domain.devices.interfaces[0] (%s): no pod network namespace was given (virt.WithNetwork)", ifaces[0].Name)
	}
	pod, err := m.network.Discover(ctx)
	if err != nil {
		return err
	}
	p, err := network.MakePlan(m.vmi, pod, m.planOpts...)
	if err != nil {
		return err
	}
	m.NetworkPlan = p
	return nil
}

func setupNetwork(ctx context.Context, m *Machine) error {
	if len(m.NetworkPlan) == 0 {
		return nil
	}
	return m.network.Setup(ctx, m.NetworkPlan)
}

func teardownNetwork(ctx context.Context, m *Machine) error {
	if len(m.NetworkPlan) == 0 {
		return nil
	}
	return m.network.Teardown(ctx, m.NetworkPlan)
}

func startDHCP(ctx context.Context, m *Machine) error {
	for _, name := range sortedKeys(m.NetworkPlan) {
		if !servesDHCP(m.NetworkPlan[name]) {
			continue
		}
		if err := startOneDHCP(ctx, m, name); err != nil {
			return errors.Join(err, stopDHCP(ctx, m))
		}
	}
	return nil
}

// servesDHCP reports whether p's guest gets its address by DHCP: not on a
// bridged pod interface without an IPv4 address (a layer 2 secondary
// network), where the guest brings its own, as in KubeVirt.
func servesDHCP(p network.InterfacePlan) bool {
	return p.Binding != network.BindingBridge || len(network.IPv4s(p.GuestIPs)) > 0
}

// startOneDHCP serves the guest of the planned interface name.
func startOneDHCP(ctx context.Context, m *Machine, name string) error {
	srv, err := m.network.StartDHCP(ctx, m.NetworkPlan[name])
	if err != nil {
		return fmt.Errorf("interface %s: %w", name, err)
	}
	if m.dhcp == nil {
		m.dhcp = map[string]network.DHCPServer{}
	}
	m.dhcp[name] = srv
	return nil
}

func stopDHCP(_ context.Context, m *Machine) error {
	var errs []error
	for _, name := range sortedKeys(m.dhcp) {
		errs = append(errs, m.dhcp[name].Stop())
	}
	m.dhcp = nil
	return errors.Join(errs...)
}

// restartDHCP serves the guest's leases again from this process, without
// touching the namespace: the taps and rules are there already.
func restartDHCP(ctx context.Context, m *Machine) error {
	if err := stopDHCP(ctx, m); err != nil {
		return err
	}
	if len(m.NetworkPlan) == 0 {
		return nil
	}
	if m.network == nil {
		return fmt.Errorf("the network plan has %d interfaces but no pod network namespace was given (virt.WithNetwork)", len(m.NetworkPlan))
	}
	return startDHCP(ctx, m)
}

// domainExists checks that the domain an earlier process defined is there.
func domainExists(ctx context.Context, m *Machine) error {
	_, _, err := m.dom.State(ctx, m.name)
	return err
}

func define(ctx context.Context, m *Machine) error {
	host := m.host
	host.Storage = m.StoragePlan
	host.Network = m.NetworkPlan
	doc, err := domain.Convert(m.vmi, host, m.convertOpts...)
	if err != nil {
		return err
	}
	m.name = doc.Name
	if err := m.dom.Define(ctx, doc); err != nil {
		return err
	}
	if len(m.vmi.Spec.Domain.Devices.Interfaces) == 0 {
		return nil
	}
	return addHotplugPorts(ctx, m)
}

// addHotplugPorts gives the defined domain empty PCIe root ports for NICs
// hotplugged later (domain.HotplugPorts): libvirt has placed the defined
// devices by now, so the new ports stay free.
func addHotplugPorts(ctx context.Context, m *Machine) error {
	defined, err := m.dom.XML(ctx, m.name, domain.XMLOptions{Inactive: true})
	if err != nil {
		return err
	}
	for _, c := range domain.HotplugPorts(defined) {
		if err := m.dom.AttachDevice(ctx, m.name, &c, domain.DevicePersistent); err != nil {
			return fmt.Errorf("adding hotplug port %d: %w", *c.Index, err)
		}
	}
	return nil
}

func undefine(ctx context.Context, m *Machine) error {
	if err := m.dom.Undefine(ctx, m.name); err != nil && !errors.Is(err, domain.ErrNotFound) {
		return err
	}
	return nil
}

func start(ctx context.Context, m *Machine) error {
	return m.dom.Start(ctx, m.name, domain.StartOptions{Paused: m.vmi.Spec.StartStrategy != nil && *m.vmi.Spec.StartStrategy == "Paused"})
}

// stopDomain powers the domain off at once; Stop shuts it down gracefully
// before the chain is undone, so this only acts on a guest still running.
func stopDomain(ctx context.Context, m *Machine) error {
	err := m.dom.Destroy(ctx, m.name)
	if err != nil && !errors.Is(err, domain.ErrInvalidState) && !errors.Is(err, domain.ErrNotFound) {
		return err
	}
	return nil
}
