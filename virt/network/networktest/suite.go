package networktest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/network"
)

// suite is the state the steps share.
type suite struct {
	tg     Target
	c      network.Configurator
	found  []network.PodInterface
	plan   network.Plan
	before []string // the namespace before Setup
}

type step struct {
	name string
	run  func(s *suite, t *testing.T)
}

// Run runs the contract against the Target newTarget returns. Steps run in
// order on one namespace; a failed step ends the run.
func Run(t *testing.T, newTarget func(t *testing.T) Target) {
	tg := newTarget(t)
	s := &suite{tg: tg, c: tg.Configurator}
	t.Cleanup(func() {
		if s.plan != nil {
			_ = s.c.Teardown(context.Background(), s.plan)
		}
	})
	for _, st := range []step{
		{"discover", (*suite).stepDiscover},
		{"invalid-plan", (*suite).stepInvalidPlan},
		{"dhcp-before-setup", (*suite).stepDHCPBeforeSetup},
		{"setup", (*suite).stepSetup},
		{"setup-again", (*suite).stepSetupAgain},
		{"dhcp", (*suite).stepDHCP},
		{"teardown", (*suite).stepTeardown},
		{"teardown-again", (*suite).stepTeardownAgain},
	} {
		if !t.Run(st.name, func(t *testing.T) { st.run(s, t) }) {
			t.Fatalf("step %q failed; the later steps build on it", st.name)
		}
	}
}

// VMI is the suite's VMI: one masquerade interface "default" on the pod
// network, forwarding TCP port 80.
func VMI() *virtv1.VirtualMachineInstance {
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns", UID: "uid-1"}}
	vmi.Spec.Domain.Devices.Interfaces = []virtv1.Interface{{
		Name:                   "default",
		InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Masquerade: &virtv1.InterfaceMasquerade{}},
		Ports:                  []virtv1.Port{{Port: 80}},
	}}
	vmi.Spec.Networks = []virtv1.Network{{Name: "default", NetworkSource: virtv1.NetworkSource{Pod: &virtv1.PodNetwork{}}}}
	return vmi
}

func (s *suite) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), time.Minute)
}

// Discover finds the pod's interfaces, loopback excluded, each with its
// addresses and MTU, and they plan.
func (s *suite) stepDiscover(t *testing.T) {
	ctx, cancel := s.ctx()
	defer cancel()
	found, err := s.c.Discover(ctx)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if len(found) == 0 {
		t.Fatalf("Discover found no interface")
	}
	names := map[string]bool{}
	for _, pi := range found {
		if pi.Name == "" || pi.Name == "lo" || names[pi.Name] {
			t.Errorf("Discover: interface %q: want a unique, non-loopback name", pi.Name)
		}
		names[pi.Name] = true
		if pi.MTU <= 0 {
			t.Errorf("Discover: interface %s has MTU %d", pi.Name, pi.MTU)
		}
	}
	if len(found[0].IPs) == 0 {
		t.Errorf("Discover: the pod's first interface %s has no address", found[0].Name)
	}
	plan, err := network.MakePlan(VMI(), found)
	if err != nil {
		t.Fatalf("MakePlan on what Discover found: %v", err)
	}
	s.found, s.plan = found, plan
	s.before = s.tg.State(t)
}

// A plan Setup cannot perform fails before anything is touched, with
// ErrInvalidPlan naming the interface.
func (s *suite) stepInvalidPlan(t *testing.T) {
	ctx, cancel := s.ctx()
	defer cancel()
	bad := network.Plan{}
	ip := s.plan["default"]
	ip.TapName = "a-tap-name-longer-than-the-kernel-allows"
	bad["default"] = ip
	err := s.c.Setup(ctx, bad)
	if !errors.Is(err, network.ErrInvalidPlan) || !strings.Contains(err.Error(), `"default"`) {
		t.Errorf("Setup of a tap name too long: %v; want ErrInvalidPlan naming \"default\"", err)
	}
	if diff := cmp.Diff(s.before, s.tg.State(t)); diff != "" {
		t.Errorf("a refused Setup changed the namespace (-before +after):\n%s", diff)
	}
}

// DHCP serves a set-up interface only.
func (s *suite) stepDHCPBeforeSetup(t *testing.T) {
	ctx, cancel := s.ctx()
	defer cancel()
	srv, err := s.c.StartDHCP(ctx, s.plan["default"])
	if err == nil {
		_ = srv.Stop()
		t.Fatalf("StartDHCP before Setup succeeded")
	}
	if !strings.Contains(err.Error(), `"default"`) {
		t.Errorf("StartDHCP before Setup: %q does not name the interface", err)
	}
}

func (s *suite) stepSetup(t *testing.T) {
	ctx, cancel := s.ctx()
	defer cancel()
	if err := s.c.Setup(ctx, s.plan); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	if cmp.Equal(s.before, s.tg.State(t)) {
		t.Errorf("Setup changed nothing in the namespace")
	}
}

// Setup again (a restarted handler) changes nothing.
func (s *suite) stepSetupAgain(t *testing.T) {
	ctx, cancel := s.ctx()
	defer cancel()
	once := s.tg.State(t)
	if err := s.c.Setup(ctx, s.plan); err != nil {
		t.Fatalf("Setup again: %v", err)
	}
	if diff := cmp.Diff(once, s.tg.State(t)); diff != "" {
		t.Errorf("a second Setup changed the namespace (-first +second):\n%s", diff)
	}
}

// DHCP needs an IPv4 guest address; a server starts on the set-up
// interface and stops, twice without harm.
func (s *suite) stepDHCP(t *testing.T) {
	ctx, cancel := s.ctx()
	defer cancel()
	noAddr := s.plan["default"]
	noAddr.GuestIPs = nil
	if srv, err := s.c.StartDHCP(ctx, noAddr); err == nil {
		_ = srv.Stop()
		t.Errorf("StartDHCP without a guest address succeeded")
	}
	srv, err := s.c.StartDHCP(ctx, s.plan["default"])
	if err != nil {
		t.Fatalf("StartDHCP: %v", err)
	}
	if s.tg.DHCPRunning != nil {
		if n := s.tg.DHCPRunning(t, "default"); n != 1 {
			t.Errorf("%d DHCP servers run after StartDHCP, want 1", n)
		}
	}
	if err := srv.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if err := srv.Stop(); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
	if s.tg.DHCPRunning != nil {
		if n := s.tg.DHCPRunning(t, "default"); n != 0 {
			t.Errorf("%d DHCP servers run after Stop, want 0", n)
		}
	}
}

// Teardown leaves the namespace as Discover found it.
func (s *suite) stepTeardown(t *testing.T) {
	ctx, cancel := s.ctx()
	defer cancel()
	if err := s.c.Teardown(ctx, s.plan); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	if diff := cmp.Diff(s.before, s.tg.State(t)); diff != "" {
		t.Errorf("after Teardown the namespace differs (-before +after):\n%s", diff)
	}
	found, err := s.c.Discover(ctx)
	if err != nil {
		t.Fatalf("Discover after Teardown: %v", err)
	}
	if diff := cmp.Diff(s.found, found); diff != "" {
		t.Errorf("Discover after Teardown (-before +after):\n%s", diff)
	}
}

// Teardown of what is gone is not an error.
func (s *suite) stepTeardownAgain(t *testing.T) {
	ctx, cancel := s.ctx()
	defer cancel()
	if err := s.c.Teardown(ctx, s.plan); err != nil {
		t.Errorf("a second Teardown: %v", err)
	}
	if diff := cmp.Diff(s.before, s.tg.State(t)); diff != "" {
		t.Errorf("a second Teardown changed the namespace (-before +after):\n%s", diff)
	}
}
