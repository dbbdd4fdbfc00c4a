package network

import (
	"context"
	"fmt"
	"sync"
)

// Fake is an in-memory Configurator for tests of callers. It keeps which
// interfaces are set up and which DHCP servers run; each method can be
// replaced through its function field (a nil field keeps the default
// behaviour, which follows the real NetNS: Setup checks the plan first and is
// a no-op for what is set up already, Teardown forgets, StartDHCP needs a set
// up interface with an IPv4 guest address).
//
// It does not model the kernel: links, addresses and rules are not
// simulated. For those, run the integration tests of this package.
type Fake struct {
	// PodInterfaces is what Discover returns.
	PodInterfaces []PodInterface

	DiscoverFunc  func(ctx context.Context) ([]PodInterface, error)
	SetupFunc     func(ctx context.Context, plan Plan) error
	TeardownFunc  func(ctx context.Context, plan Plan) error
	StartDHCPFunc func(ctx context.Context, plan InterfacePlan) (DHCPServer, error)

	mu     sync.Mutex
	active Plan
	dhcp   map[string]int
	calls  []string
}

var _ Configurator = (*Fake)(nil)

// Discover returns PodInterfaces.
func (f *Fake) Discover(ctx context.Context) ([]PodInterface, error) {
	f.record("Discover")
	if f.DiscoverFunc != nil {
		return f.DiscoverFunc(ctx)
	}
	return append([]PodInterface(nil), f.PodInterfaces...), ctx.Err()
}

// Setup records plan's interfaces as set up.
func (f *Fake) Setup(ctx context.Context, plan Plan) error {
	f.record("Setup")
	if f.SetupFunc != nil {
		return f.SetupFunc(ctx, plan)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := plan.Check(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active == nil {
		f.active = Plan{}
	}
	for name, ip := range plan {
		f.active[name] = ip
	}
	return nil
}

// Teardown forgets plan's interfaces.
func (f *Fake) Teardown(ctx context.Context, plan Plan) error {
	f.record("Teardown")
	if f.TeardownFunc != nil {
		return f.TeardownFunc(ctx, plan)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for name := range plan {
		delete(f.active, name)
	}
	return ctx.Err()
}

// StartDHCP returns a server that counts as running until stopped.
func (f *Fake) StartDHCP(ctx context.Context, plan InterfacePlan) (DHCPServer, error) {
	f.record("StartDHCP")
	if f.StartDHCPFunc != nil {
		return f.StartDHCPFunc(ctx, plan)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if _, err := plan.GuestIPv4(); err != nil {
		return nil, fmt.Errorf("network: DHCP for interface %q: %w", plan.Interface, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.active[plan.Interface]; !ok {
		return nil, fmt.Errorf("network: DHCP for interface %q: tap %s: not set up", plan.Interface, plan.TapName)
	}
	if f.dhcp == nil {
		f.dhcp = map[string]int{}
	}
	f.dhcp[plan.Interface]++
	return &fakeDHCP{f: f, iface: plan.Interface}, nil
}

// Active returns the interfaces set up and not torn down.
func (f *Fake) Active() Plan {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := Plan{}
	for k, v := range f.active {
		out[k] = v
	}
	return out
}

// DHCPRunning reports how many DHCP servers run for the interface.
func (f *Fake) DHCPRunning(iface string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dhcp[iface]
}

// Calls lists the methods called, in order.
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *Fake) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

type fakeDHCP struct {
	f     *Fake
	iface string
	once  sync.Once
}

func (d *fakeDHCP) Stop() error {
	d.once.Do(func() {
		d.f.mu.Lock()
		defer d.f.mu.Unlock()
		d.f.dhcp[d.iface]--
	})
	return nil
}
