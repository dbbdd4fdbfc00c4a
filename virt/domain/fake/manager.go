package fake

import (
	"context"
	"fmt"
	"sync"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
)

var _ domain.Manager = (*Manager)(nil)

// AgentFunc answers a guest agent command (JSON) for a domain with the
// agent's JSON reply, or fails.
type AgentFunc func(domainName, command string) (string, error)

// Manager is an in-memory domain.Manager. The zero value is not usable; call New.
type Manager struct {
	now   func() time.Time
	agent AgentFunc
	// cpuTick is the synthetic CPU time a running domain gains per Stats
	// call, so that CPU time grows even under a frozen clock.
	cpuTick time.Duration

	mu      sync.Mutex
	closed  bool
	domains map[string]*fakeDomain
	subs    map[*domain.EventQueue]struct{}
	fail    map[string][]error         // op -> errors for its next calls
	holds   map[string][]chan struct{} // op -> gates its calls wait on
	uuids   int
	mig     *migrations // migration jobs, peers and models (migration.go); nil until used
}

// fakeDomain is one domain: its persistent definition and, while it runs,
// its live document.
type fakeDomain struct {
	config     *libvirtxml.Domain
	live       *libvirtxml.Domain // nil while shut off
	uuid       string
	persistent bool
	state      domain.State
	reason     domain.Reason
	started    time.Time
	ignoreACPI bool
	agent      AgentFunc // overrides the Manager's for this domain
	console    *console  // the open console session, if any
	input      []byte    // what hung-up sessions wrote to the guest
	aliases    int       // device aliases handed out
	cpu        time.Duration
	hotAlias   string // alias of the device the last live hotplug changed
}

// Option configures New.
type Option func(*Manager)

// WithClock sets the clock that stamps events and times synthetic CPU use.
// The default is time.Now; tests that compare events pass a fixed one.
func WithClock(now func() time.Time) Option { return func(m *Manager) { m.now = now } }

// WithAgent replaces the modelled guest agent of every domain (see
// DefaultAgent).
func WithAgent(f AgentFunc) Option { return func(m *Manager) { m.agent = f } }

// New returns an empty fake Manager.
func New(opts ...Option) *Manager {
	m := &Manager{
		now:     time.Now,
		agent:   DefaultAgent,
		cpuTick: 10 * time.Millisecond,
		domains: map[string]*fakeDomain{},
		subs:    map[*domain.EventQueue]struct{}{},
		fail:    map[string][]error{},
		holds:   map[string][]chan struct{}{},
	}
	for _, o := range opts {
		o(m)
	}
	return m
}

// FailNext makes the next call of op (domain.OpStart, ...) fail with err,
// before it changes anything. Calls queue: FailNext twice fails the next
// two calls. The returned error is a *domain.Error wrapping err, so
// errors.Is(returned, err) holds.
func (m *Manager) FailNext(op string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fail[op] = append(m.fail[op], err)
}

// Hold makes calls of op block, as a hung hypervisor would, until release
// is called or the call's context ends (the call then returns the context's
// error). It models the blocking that the libvirt Manager bounds with contexts.
func (m *Manager) Hold(op string) (release func()) {
	gate := make(chan struct{})
	m.mu.Lock()
	m.holds[op] = append(m.holds[op], gate)
	m.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			gates := m.holds[op]
			for i, g := range gates {
				if g == gate {
					m.holds[op] = append(gates[:i:i], gates[i+1:]...)
					break
				}
			}
			m.mu.Unlock()
			close(gate)
		})
	}
}

// Emit publishes e to every Events subscriber as if the hypervisor had
// reported it; a zero Time is set from the clock. It changes no state.
func (m *Manager) Emit(e domain.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.Time.IsZero() {
		e.Time = m.now()
	}
	m.publishLocked(e)
}

// SetAgent replaces the modelled guest agent of one domain; nil restores the default.
func (m *Manager) SetAgent(name string, f AgentFunc) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.domains[name]
	if !ok {
		return &domain.Error{Op: "set-agent", Domain: name, Kind: domain.ErrNotFound}
	}
	d.agent = f
	return nil
}

// IgnoreACPI makes a domain's guest ignore the ACPI power button, as a
// guest without ACPI support or one still booting does: Shutdown and Reboot
// then succeed and change nothing.
func (m *Manager) IgnoreACPI(name string, ignore bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.domains[name]
	if !ok {
		return &domain.Error{Op: "ignore-acpi", Domain: name, Kind: domain.ErrNotFound}
	}
	d.ignoreACPI = ignore
	return nil
}

// Crash stops a running domain as a crashing guest or a killed QEMU would:
// shut off with reason crashed, and a stopped/crashed event.
func (m *Manager) Crash(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.domains[name]
	if !ok || d.live == nil {
		return &domain.Error{Op: "crash", Domain: name, Kind: domain.ErrInvalidState, Message: "domain is not running"}
	}
	m.stopLocked(name, d, domain.ReasonShutoffCrashed, domain.DetailStoppedCrashed)
	return nil
}

// enter starts an operation: it fails when the Manager is closed or ctx has
// ended, waits on Hold gates, and consumes a FailNext error. It returns with
// m.mu held when it returns nil.
func (m *Manager) enter(ctx context.Context, op, name string) error {
	for {
		if err := ctx.Err(); err != nil {
			return &domain.Error{Op: op, Domain: name, Err: err}
		}
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return &domain.Error{Op: op, Domain: name, Kind: domain.ErrClosed}
		}
		if gates := m.holds[op]; len(gates) > 0 {
			gate := gates[0]
			m.mu.Unlock()
			select {
			case <-gate:
				continue
			case <-ctx.Done():
				return &domain.Error{Op: op, Domain: name, Err: ctx.Err()}
			}
		}
		if errs := m.fail[op]; len(errs) > 0 {
			m.fail[op] = errs[1:]
			m.mu.Unlock()
			return &domain.Error{Op: op, Domain: name, Err: errs[0]}
		}
		return nil
	}
}

// lookupLocked finds a domain or returns libvirt's "not found".
func (m *Manager) lookupLocked(op, name string) (*fakeDomain, error) {
	d, ok := m.domains[name]
	if !ok {
		return nil, &domain.Error{Op: op, Domain: name, Kind: domain.ErrNotFound, Message: "Domain not found: no domain with matching name '" + name + "'"}
	}
	return d, nil
}

// onDomain runs fn on a domain with m.mu held.
func (m *Manager) onDomain(ctx context.Context, op, name string, fn func(*fakeDomain) error) error {
	if err := m.enter(ctx, op, name); err != nil {
		return err
	}
	defer m.mu.Unlock()
	d, err := m.lookupLocked(op, name)
	if err != nil {
		return err
	}
	return fn(d)
}

// Close ends every event subscription and console; later calls fail with ErrClosed.
func (m *Manager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	for s := range m.subs {
		s.Stop()
	}
	m.subs = map[*domain.EventQueue]struct{}{}
	for _, d := range m.domains {
		if d.console != nil {
			d.console.hangup()
			d.console = nil
		}
	}
	return nil
}

func (m *Manager) newUUID() string {
	m.uuids++
	return fmt.Sprintf("00000000-0000-4000-8000-%012x", m.uuids)
}

// copyDoc deep-copies a document through its XML, as libvirt's parse would.
func copyDoc(doc *libvirtxml.Domain) (*libvirtxml.Domain, error) {
	s, err := doc.Marshal()
	if err != nil {
		return nil, err
	}
	out := &libvirtxml.Domain{}
	if err := out.Unmarshal(s); err != nil {
		return nil, err
	}
	return out, nil
}

func invalidState(op, name, msg string) error {
	return &domain.Error{Op: op, Domain: name, Kind: domain.ErrInvalidState, Message: "Requested operation is not valid: " + msg}
}
