package vmi

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virt/storage/backendstorage"
)

func TestPlanFor(t *testing.T) {
	tests := []struct {
		name string
		vmi  *virtv1.VirtualMachineInstance
		pod  *corev1.Pod
		want Plan
	}{
		{"new VMI", newVMI(), nil, Plan{AddFinalizer: true, CreatePod: true}},
		{"Pending, pod creation failed before", newVMI(finalized(), phase(virtv1.Pending)), nil, Plan{CreatePod: true}},
		{"Scheduling, pod pending", newVMI(finalized(), phase(virtv1.Scheduling)), newPod(), Plan{}},
		{"Scheduling, pod gone: no new pod", newVMI(finalized(), phase(virtv1.Scheduling)), nil, Plan{}},
		{"pod bound: no metadata write", newVMI(finalized(), phase(virtv1.Scheduling)), newPod(onNode("n1")), Plan{}},
		{"Failed: delete the pod", newVMI(finalized(), phase(virtv1.Failed)), newPod(onNode("n1")), Plan{DeletePod: true}},
		{"Succeeded: delete the pod", newVMI(finalized(), phase(virtv1.Succeeded)), newPod(onNode("n1")), Plan{DeletePod: true}},
		{"Failed, pod going", newVMI(finalized(), phase(virtv1.Failed)), newPod(podDeleting()), Plan{}},
		{"deleted: delete the pod", newVMI(finalized(), phase(virtv1.Running), vmiDeleting()), newPod(onNode("n1")), Plan{DeletePod: true}},
		{"deleted, pod going: wait", newVMI(finalized(), phase(virtv1.Running), vmiDeleting()), newPod(podDeleting()), Plan{}},
		{"deleted, pod gone: release", newVMI(finalized(), phase(virtv1.Running), vmiDeleting()), nil, Plan{RemoveFinalizer: true}},
		{"deleted, not ours to release", newVMI(phase(virtv1.Running), vmiDeleting()), nil, Plan{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, PlanFor(tc.vmi, tc.pod)); d != "" {
				t.Errorf("PlanFor (-want +got):\n%s", d)
			}
		})
	}
}

// brief is the part of a status the table checks.
type brief struct {
	Phase      virtv1.VirtualMachineInstancePhase
	Reason     string
	NodeName   string
	Conditions map[virtv1.VirtualMachineInstanceConditionType]string // "Status Reason: Message"
}

func briefOf(st virtv1.VirtualMachineInstanceStatus) brief {
	b := brief{Phase: st.Phase, Reason: st.Reason, NodeName: st.NodeName}
	for _, c := range st.Conditions {
		if b.Conditions == nil {
			b.Conditions = map[virtv1.VirtualMachineInstanceConditionType]string{}
		}
		b.Conditions[c.Type] = string(c.Status) + " " + c.Reason + ": " + c.Message
	}
	return b
}

func TestNextStatus(t *testing.T) {
	tests := []struct {
		name      string
		vmi       *virtv1.VirtualMachineInstance
		pod       *corev1.Pod
		createErr error
		want      brief
	}{
		{"created: Scheduling", newVMI(), newPod(), nil, brief{Phase: virtv1.Scheduling}},
		{"create failed: Pending with the reason", newVMI(), nil, errors.New("quota exceeded"), brief{Phase: virtv1.Pending,
			Conditions: map[virtv1.VirtualMachineInstanceConditionType]string{"Synchronized": "False FailedCreate: quota exceeded"}}},
		{"unschedulable: reason surfaced", newVMI(phase(virtv1.Scheduling)), newPod(unschedulable("0/3 nodes are available: 3 Insufficient memory.")), nil,
			brief{Phase: virtv1.Scheduling, Conditions: map[virtv1.VirtualMachineInstanceConditionType]string{
				"PodScheduled": "False Unschedulable: 0/3 nodes are available: 3 Insufficient memory."}}},
		{"bound: Scheduled, condition dropped", newVMI(phase(virtv1.Scheduling), func(v *virtv1.VirtualMachineInstance) {
			v.Status.Conditions = []virtv1.VirtualMachineInstanceCondition{{Type: PodScheduled, Status: corev1.ConditionFalse}}
		}), newPod(onNode("n1")), nil, brief{Phase: virtv1.Scheduled, NodeName: "n1"}},
		{"launcher crashed while Scheduled", newVMI(phase(virtv1.Scheduled)), newPod(onNode("n1"), computeExited(contract.ExitSetupFailed, "libvirtd: cannot bind socket\n")), nil,
			brief{Phase: virtv1.Failed, Reason: ReasonLauncherSetupFailed, Conditions: map[virtv1.VirtualMachineInstanceConditionType]string{
				"Ready": "False LauncherSetupFailed: libvirtd: cannot bind socket"}}},
		{"pod evicted while Scheduling", newVMI(phase(virtv1.Scheduling)), newPod(func(p *corev1.Pod) {
			p.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "node low on memory"}
		}), nil, brief{Phase: virtv1.Failed, Reason: "Evicted", Conditions: map[virtv1.VirtualMachineInstanceConditionType]string{
			"Ready": "False Evicted: node low on memory"}}},
		{"pod deleted before the handler took over", newVMI(phase(virtv1.Scheduled)), nil, nil, brief{Phase: virtv1.Failed, Reason: ReasonPodNotExists,
			Conditions: map[virtv1.VirtualMachineInstanceConditionType]string{"Ready": "False PodNotExists: the launcher pod was deleted before the VirtualMachineInstance ended"}}},
		{"containerDisk image missing: said on the VMI", newVMI(phase(virtv1.Scheduled), func(v *virtv1.VirtualMachineInstance) { v.Status.NodeName = "n1" }),
			newPod(onNode("n1"), imageWaiting(ReasonErrImagePull, `image "no/such:1" is not in the local image store`)), nil,
			brief{Phase: virtv1.Scheduled, NodeName: "n1", Conditions: map[virtv1.VirtualMachineInstanceConditionType]string{
				"Synchronized": `False ErrImagePull: image "no/such:1" is not in the local image store`}}},
		{"image arrived: the condition goes", newVMI(phase(virtv1.Scheduled), func(v *virtv1.VirtualMachineInstance) {
			v.Status.NodeName = "n1"
			v.Status.Conditions = []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstanceSynchronized, Status: corev1.ConditionFalse, Reason: ReasonImagePullBackOff}}
		}), newPod(onNode("n1")), nil, brief{Phase: virtv1.Scheduled, NodeName: "n1"}},
		{"the handler's Synchronized reason stays", newVMI(phase(virtv1.Scheduled), func(v *virtv1.VirtualMachineInstance) {
			v.Status.NodeName = "n1"
			v.Status.Conditions = []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstanceSynchronized, Status: corev1.ConditionFalse, Reason: "SyncFailed", Message: "x"}}
		}), newPod(onNode("n1"), imageWaiting(ReasonErrImagePull, "m")), nil, brief{Phase: virtv1.Scheduled, NodeName: "n1",
			Conditions: map[virtv1.VirtualMachineInstanceConditionType]string{"Synchronized": "False SyncFailed: x"}}},
		{"pod being deleted while Scheduling: wait for it", newVMI(phase(virtv1.Scheduling)), newPod(podDeleting()), nil, brief{Phase: virtv1.Scheduling}},
		{"Running: launcher end is the handler's", newVMI(phase(virtv1.Running)), newPod(onNode("n1"), computeExited(contract.ExitGuestCrashed, "guest crashed")), nil,
			brief{Phase: virtv1.Running}},
		{"Running, pod gone: Failed", newVMI(phase(virtv1.Running)), nil, nil, brief{Phase: virtv1.Failed, Reason: ReasonPodNotExists,
			Conditions: map[virtv1.VirtualMachineInstanceConditionType]string{"Ready": "False PodNotExists: the launcher pod was deleted before the VirtualMachineInstance ended"}}},
		{"Running: the handler's Synchronized condition stays", newVMI(phase(virtv1.Running), func(v *virtv1.VirtualMachineInstance) {
			v.Status.Conditions = []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstanceSynchronized, Status: corev1.ConditionFalse, Reason: "SyncFailed"}}
		}), newPod(onNode("n1")), nil, brief{Phase: virtv1.Running, Conditions: map[virtv1.VirtualMachineInstanceConditionType]string{"Synchronized": "False SyncFailed: "}}},
		{"Running with a readiness probe: the pod's readiness", newVMI(phase(virtv1.Running), probed), newPod(onNode("n1"), podReady(corev1.ConditionFalse)), nil,
			brief{Phase: virtv1.Running, Conditions: map[virtv1.VirtualMachineInstanceConditionType]string{
				"Ready": "False ContainersNotReady: containers with unready status: [compute]"}}},
		{"Running with a readiness probe that passes", newVMI(phase(virtv1.Running), probed), newPod(onNode("n1"), podReady(corev1.ConditionTrue)), nil,
			brief{Phase: virtv1.Running, Conditions: map[virtv1.VirtualMachineInstanceConditionType]string{"Ready": "True : "}}},
		{"Running with a readiness probe, pod without Ready", newVMI(phase(virtv1.Running), probed), newPod(onNode("n1")), nil,
			brief{Phase: virtv1.Running, Conditions: map[virtv1.VirtualMachineInstanceConditionType]string{
				"Ready": "False PodConditionMissing: virt-launcher pod is missing the Ready condition"}}},
		{"paused with a readiness probe: the handler's", newVMI(phase(virtv1.Running), probed, func(v *virtv1.VirtualMachineInstance) {
			v.Status.Conditions = []virtv1.VirtualMachineInstanceCondition{
				{Type: virtv1.VirtualMachineInstanceReady, Status: corev1.ConditionFalse, Reason: "Paused"},
				{Type: virtv1.VirtualMachineInstancePaused, Status: corev1.ConditionTrue, Reason: "PausedByUser"}}
		}), newPod(onNode("n1"), podReady(corev1.ConditionTrue)), nil,
			brief{Phase: virtv1.Running, Conditions: map[virtv1.VirtualMachineInstanceConditionType]string{"Ready": "False Paused: ", "Paused": "True PausedByUser: "}}},
		{"Running without a readiness probe: the handler's", newVMI(phase(virtv1.Running)), newPod(onNode("n1"), podReady(corev1.ConditionFalse)), nil,
			brief{Phase: virtv1.Running}},
		{"final: untouched", newVMI(phase(virtv1.Succeeded)), nil, nil, brief{Phase: virtv1.Succeeded}},
		{"deleting: untouched", newVMI(phase(virtv1.Scheduling), vmiDeleting()), nil, nil, brief{Phase: virtv1.Scheduling}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.vmi.DeepCopy()
			got := NextStatus(tc.vmi, tc.pod, tc.createErr, t0)
			if d := cmp.Diff(tc.want, briefOf(got)); d != "" {
				t.Errorf("NextStatus (-want +got):\n%s", d)
			}
			if d := cmp.Diff(before, tc.vmi); d != "" {
				t.Errorf("NextStatus changed its input:\n%s", d)
			}
			// Applying it again changes nothing: no second write.
			again := tc.vmi.DeepCopy()
			again.Status = got
			if d := cmp.Diff(got, NextStatus(again, tc.pod, tc.createErr, t0.Add(5e9))); d != "" {
				t.Errorf("NextStatus is not stable (-first +second):\n%s", d)
			}
		})
	}
}

func probed(v *virtv1.VirtualMachineInstance) {
	v.Spec.ReadinessProbe = &virtv1.Probe{Handler: virtv1.Handler{GuestAgentPing: &virtv1.GuestAgentPing{}}}
}

func podReady(status corev1.ConditionStatus) podOpt {
	return func(p *corev1.Pod) {
		c := corev1.PodCondition{Type: corev1.PodReady, Status: status}
		if status != corev1.ConditionTrue {
			c.Reason, c.Message = "ContainersNotReady", "containers with unready status: [compute]"
		}
		p.Status.Conditions = append(p.Status.Conditions, c)
	}
}

func TestNextStatusTimestamps(t *testing.T) {
	st := NextStatus(newVMI(), newPod(), nil, t0)
	var phases []virtv1.VirtualMachineInstancePhase
	for _, p := range st.PhaseTransitionTimestamps {
		phases = append(phases, p.Phase)
	}
	if d := cmp.Diff([]virtv1.VirtualMachineInstancePhase{virtv1.Pending, virtv1.Scheduling}, phases); d != "" {
		t.Errorf("phase transitions (-want +got):\n%s", d)
	}
	if st.ActivePods["pod-uid"] != "" || len(st.ActivePods) != 1 {
		t.Errorf("activePods = %v, want the pod with no node yet", st.ActivePods)
	}
}

// The image of the launcher that holds the guest is recorded once the pod is
// bound, in the write that says Scheduled: the workload updater compares it
// with the image in force.
func TestNextStatusLauncherImage(t *testing.T) {
	withImage := func(img string) podOpt {
		return func(p *corev1.Pod) {
			p.Spec.Containers = []corev1.Container{{Name: "guest-console-log"}, {Name: ComputeContainer, Image: img}}
		}
	}
	for _, tc := range []struct {
		name string
		vmi  *virtv1.VirtualMachineInstance
		pod  *corev1.Pod
		want string
	}{
		{"Scheduling: not yet", newVMI(phase(virtv1.Scheduling)), newPod(withImage("l:v1")), ""},
		{"bound: recorded in the Scheduled write", newVMI(phase(virtv1.Scheduling)), newPod(onNode("n1"), withImage("l:v1")), "l:v1"},
		{"Running: recorded", newVMI(phase(virtv1.Running)), newPod(onNode("n1"), withImage("l:v1")), "l:v1"},
		{"Running on a new launcher (a migration's target): follows it", newVMI(phase(virtv1.Running), func(v *virtv1.VirtualMachineInstance) {
			v.Status.LauncherContainerImageVersion = "l:v1"
		}), newPod(onNode("n1"), withImage("l:v2")), "l:v2"},
		{"pod being deleted: kept", newVMI(phase(virtv1.Running), func(v *virtv1.VirtualMachineInstance) {
			v.Status.LauncherContainerImageVersion = "l:v1"
		}), newPod(onNode("n1"), withImage("l:v2"), podDeleting()), "l:v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := NextStatus(tc.vmi, tc.pod, nil, t0)
			if got.LauncherContainerImageVersion != tc.want {
				t.Errorf("launcherContainerImageVersion %q, want %q", got.LauncherContainerImageVersion, tc.want)
			}
		})
	}
}

// A launcher pod that mounts a backend-storage claim names it in the
// VMI's volume status, as KubeVirt's controller does.
func TestNextStatusBackendStorage(t *testing.T) {
	withState := func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "vm-state", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "persistent-state-for-vmi1-x7k2p"}}})
	}
	st := NextStatus(newVMI(phase(virtv1.Scheduling)), newPod(withState), nil, time.Now())
	if got := backendstorage.ClaimName(&st); got != "persistent-state-for-vmi1-x7k2p" {
		t.Errorf("volume status %+v: names claim %q", st.VolumeStatus, got)
	}
	st = NextStatus(newVMI(phase(virtv1.Scheduling)), newPod(), nil, time.Now())
	if len(st.VolumeStatus) != 0 {
		t.Errorf("a pod without backend storage: volume status %+v", st.VolumeStatus)
	}
}
