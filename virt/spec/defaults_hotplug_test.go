package spec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	virtv1 "kubevirt.io/api/core/v1"
)

// Under LiveUpdate a VMI gets KubeVirt's room to grow: maxSockets from the
// cluster or 4x its sockets (at most 512 vCPUs, never fewer than it has),
// maxGuest from the cluster or 4x its guest when memory hotplug suits it;
// what the VMI sets stays, and without LiveUpdate nothing is added.
func TestDefaultHotplugMaximums(t *testing.T) {
	gi := func(n int64) *resource.Quantity { return resource.NewQuantity(n<<30, resource.BinarySI) }
	vmi := func(sockets, cores uint32, guest *resource.Quantity, edit ...func(*virtv1.VirtualMachineInstanceSpec)) *virtv1.VirtualMachineInstanceSpec {
		s := &virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{CPU: &virtv1.CPU{Sockets: sockets, Cores: cores, Threads: 1},
			Memory: &virtv1.Memory{Guest: guest}}}
		for _, e := range edit {
			e(s)
		}
		return s
	}
	type want struct {
		maxSockets uint32
		maxGuest   *resource.Quantity
	}
	for _, c := range []struct {
		name string
		live *LiveUpdate
		spec *virtv1.VirtualMachineInstanceSpec
		want want
	}{
		{"Stage: nothing", nil, vmi(1, 1, gi(2)), want{}},
		{"KubeVirt's ratio", &LiveUpdate{}, vmi(2, 1, gi(2)), want{8, gi(8)}},
		{"the cluster's ratio", &LiveUpdate{Ratio: 2}, vmi(2, 1, gi(2)), want{4, gi(4)}},
		{"the cluster's maximums", &LiveUpdate{MaxCPUSockets: 6, MaxGuest: gi(3)}, vmi(2, 1, gi(2)), want{6, gi(3)}},
		{"more sockets than the cluster's maximum", &LiveUpdate{MaxCPUSockets: 2}, vmi(3, 1, gi(2)), want{3, gi(8)}},
		{"at most 512 vCPUs", &LiveUpdate{}, vmi(2, 128, gi(2)), want{4, gi(8)}},
		{"a guest too small for memory hotplug", &LiveUpdate{}, vmi(1, 1, resource.NewQuantity(128<<20, resource.BinarySI)), want{4, nil}},
		{"the cluster's maxGuest below the guest", &LiveUpdate{MaxGuest: gi(1)}, vmi(1, 1, gi(2)), want{4, nil}},
		{"realtime: no memory hotplug", &LiveUpdate{}, vmi(1, 1, gi(2), func(s *virtv1.VirtualMachineInstanceSpec) { s.Domain.CPU.Realtime = &virtv1.Realtime{} }), want{4, nil}},
		{"the VMI's own", &LiveUpdate{}, vmi(1, 1, gi(2), func(s *virtv1.VirtualMachineInstanceSpec) {
			s.Domain.CPU.MaxSockets, s.Domain.Memory.MaxGuest = 2, gi(3)
		}), want{2, gi(3)}},
		{"not on arm64", &LiveUpdate{}, vmi(1, 1, gi(2), func(s *virtv1.VirtualMachineInstanceSpec) { s.Architecture = ArchARM64 }), want{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var opts []Option
			if c.live != nil {
				opts = append(opts, WithLiveUpdate(*c.live))
			}
			cfg := newConfig(opts)
			defaultHotplugMaximums(&cfg, c.spec)
			got := want{c.spec.Domain.CPU.MaxSockets, c.spec.Domain.Memory.MaxGuest}
			if d := cmp.Diff(c.want, got, cmp.AllowUnexported(want{}), cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
