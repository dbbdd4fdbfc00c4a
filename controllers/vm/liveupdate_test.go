package vm

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

// PlanLiveUpdate carries CPU sockets, guest memory and placement over to a
// running VMI as KubeVirt's LiveUpdate does, and names with KubeVirt's
// messages what needs a restart instead.
func TestPlanLiveUpdate(t *testing.T) {
	mi := func(n int64) *resource.Quantity { return resource.NewQuantity(n<<20, resource.BinarySI) }
	running := func() *virtv1.VirtualMachineInstance {
		return &virtv1.VirtualMachineInstance{
			Spec: virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{
				CPU:       &virtv1.CPU{Sockets: 1, Cores: 1, Threads: 1, MaxSockets: 4},
				Memory:    &virtv1.Memory{Guest: mi(128), MaxGuest: mi(512)},
				Resources: virtv1.ResourceRequirements{Requests: k8sv1.ResourceList{k8sv1.ResourceMemory: *mi(128)}},
			}},
			Status: virtv1.VirtualMachineInstanceStatus{
				Phase:      virtv1.Running,
				Memory:     &virtv1.MemoryStatus{GuestAtBoot: mi(128)},
				Conditions: []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstanceIsMigratable, Status: k8sv1.ConditionTrue}},
			},
		}
	}
	live := Rollout{LiveUpdate: true}
	for _, tc := range []struct {
		name    string
		tmpl    func(*virtv1.VirtualMachineInstanceSpec)
		vmi     func(*virtv1.VirtualMachineInstance)
		ro      Rollout
		want    func(*virtv1.VirtualMachineInstanceSpec) // nil: no change
		restart string
	}{
		{name: "unchanged", ro: live},
		{name: "sockets grow", ro: live, tmpl: func(s *virtv1.VirtualMachineInstanceSpec) { s.Domain.CPU.Sockets = 2 },
			want: func(s *virtv1.VirtualMachineInstanceSpec) { s.Domain.CPU.Sockets = 2 }},
		{name: "sockets grow with the CPU request the template sets", ro: live,
			tmpl: func(s *virtv1.VirtualMachineInstanceSpec) {
				s.Domain.CPU.Sockets = 3
				s.Domain.Resources.Requests[k8sv1.ResourceCPU] = resource.MustParse("100m")
			},
			vmi: func(v *virtv1.VirtualMachineInstance) {
				v.Spec.Domain.Resources.Requests[k8sv1.ResourceCPU] = resource.MustParse("100m")
			},
			want: func(s *virtv1.VirtualMachineInstanceSpec) {
				s.Domain.CPU.Sockets = 3
				s.Domain.Resources.Requests[k8sv1.ResourceCPU] = resource.MustParse("300m")
			}},
		{name: "under Stage a restart", ro: Rollout{}, tmpl: func(s *virtv1.VirtualMachineInstanceSpec) { s.Domain.CPU.Sockets = 2 },
			restart: MessageRestartRequired},
		{name: "sockets past maxSockets", ro: live, tmpl: func(s *virtv1.VirtualMachineInstanceSpec) { s.Domain.CPU.Sockets = 5 },
			restart: MessageSocketsPastMax},
		{name: "fewer sockets", ro: live, tmpl: func(s *virtv1.VirtualMachineInstanceSpec) { s.Domain.CPU.Sockets = 1 },
			vmi:     func(v *virtv1.VirtualMachineInstance) { v.Spec.Domain.CPU.Sockets = 2 },
			restart: MessageSocketsReduced},
		{name: "a CPU hotplug under way waits", ro: live, tmpl: func(s *virtv1.VirtualMachineInstanceSpec) { s.Domain.CPU.Sockets = 3 },
			vmi: func(v *virtv1.VirtualMachineInstance) {
				v.Spec.Domain.CPU.Sockets = 2
				v.Status.Conditions = append(v.Status.Conditions, virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceVCPUChange, Status: k8sv1.ConditionTrue})
			}},
		{name: "a migration waits", ro: live, tmpl: func(s *virtv1.VirtualMachineInstanceSpec) { s.Domain.CPU.Sockets = 2 },
			vmi: func(v *virtv1.VirtualMachineInstance) {
				v.Status.MigrationState = &virtv1.VirtualMachineInstanceMigrationState{StartTimestamp: &metav1.Time{}}
			}},
		{name: "memory grows with its request", ro: live, tmpl: func(s *virtv1.VirtualMachineInstanceSpec) { s.Domain.Memory.Guest = mi(256) },
			want: func(s *virtv1.VirtualMachineInstanceSpec) {
				s.Domain.Memory.Guest = mi(256)
				s.Domain.Resources.Requests[k8sv1.ResourceMemory] = *mi(256)
			}},
		{name: "memory of a VMI that cannot migrate", ro: live, tmpl: func(s *virtv1.VirtualMachineInstanceSpec) { s.Domain.Memory.Guest = mi(256) },
			vmi:     func(v *virtv1.VirtualMachineInstance) { v.Status.Conditions = nil },
			restart: MessageMemoryNotMigratable},
		{name: "memory without maxGuest", ro: live, tmpl: func(s *virtv1.VirtualMachineInstanceSpec) { s.Domain.Memory.Guest = mi(256) },
			vmi:     func(v *virtv1.VirtualMachineInstance) { v.Spec.Domain.Memory.MaxGuest = nil },
			restart: MessageMemoryNoMaxGuest},
		{name: "memory below the boot memory", ro: live, tmpl: func(s *virtv1.VirtualMachineInstanceSpec) { s.Domain.Memory.Guest = mi(64) },
			restart: MessageMemoryBelowBoot},
		{name: "memory past maxGuest", ro: live, tmpl: func(s *virtv1.VirtualMachineInstanceSpec) { s.Domain.Memory.Guest = mi(1024) },
			restart: MessageMemoryPastMax},
		{name: "memory after a failed hotplug", ro: live, tmpl: func(s *virtv1.VirtualMachineInstanceSpec) { s.Domain.Memory.Guest = mi(256) },
			vmi: func(v *virtv1.VirtualMachineInstance) {
				v.Status.Conditions = append(v.Status.Conditions, virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceMemoryChange, Status: k8sv1.ConditionFalse})
			},
			restart: MessageMemoryHotplugFailed},
		{name: "placement is carried over", ro: live,
			tmpl: func(s *virtv1.VirtualMachineInstanceSpec) {
				s.NodeSelector = map[string]string{"zone": "b"}
				s.Tolerations = []k8sv1.Toleration{{Key: "dedicated", Operator: k8sv1.TolerationOpExists}}
			},
			want: func(s *virtv1.VirtualMachineInstanceSpec) {
				s.NodeSelector = map[string]string{"zone": "b"}
				s.Tolerations = []k8sv1.Toleration{{Key: "dedicated", Operator: k8sv1.TolerationOpExists}}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := running()
			if tc.vmi != nil {
				tc.vmi(vmi)
			}
			tmpl := vmi.Spec.DeepCopy()
			tmpl.Domain.CPU.Sockets = running().Spec.Domain.CPU.Sockets
			if tc.tmpl != nil {
				tc.tmpl(tmpl)
			}
			before := vmi.DeepCopy()
			got := PlanLiveUpdate(tmpl, vmi, tc.ro)
			if got.Restart != tc.restart {
				t.Errorf("restart message %q, want %q", got.Restart, tc.restart)
			}
			var want *virtv1.VirtualMachineInstanceSpec
			if tc.want != nil {
				want = vmi.Spec.DeepCopy()
				tc.want(want)
			}
			if diff := cmp.Diff(want, got.Spec); diff != "" {
				t.Errorf("VMI spec (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, vmi); diff != "" {
				t.Errorf("PlanLiveUpdate changed the VMI it was given:\n%s", diff)
			}
		})
	}
}
