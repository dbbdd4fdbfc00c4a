package vmi

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

func TestDataVolumeReady(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dv    *cdiv1.DataVolume
		claim bool
		want  bool
	}{
		{"no DataVolume, no claim", nil, false, false},
		{"no DataVolume, a claim", nil, true, true},
		{"importing", &cdiv1.DataVolume{Status: cdiv1.DataVolumeStatus{Phase: cdiv1.ImportInProgress}}, true, false},
		{"failed", &cdiv1.DataVolume{Status: cdiv1.DataVolumeStatus{Phase: cdiv1.Failed}}, true, false},
		{"succeeded", &cdiv1.DataVolume{Status: cdiv1.DataVolumeStatus{Phase: cdiv1.Succeeded}}, true, true},
		{"waiting for its first consumer", &cdiv1.DataVolume{Status: cdiv1.DataVolumeStatus{Phase: cdiv1.WaitForFirstConsumer}}, true, false},
		{"waiting for a populator", &cdiv1.DataVolume{Status: cdiv1.DataVolumeStatus{Phase: cdiv1.PendingPopulation}}, true, true},
	} {
		if got := DataVolumeReady(tc.dv, tc.claim); got != tc.want {
			t.Errorf("%s: DataVolumeReady = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// blankDataVolume makes a blank DataVolume "disk" in ns, its status
// left to the test.
func (cl *cluster) blankDataVolume(t *testing.T, ns string) *cdiv1.DataVolume {
	t.Helper()
	dv := &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "disk"},
		Spec: cdiv1.DataVolumeSpec{Source: &cdiv1.DataVolumeSource{Blank: &cdiv1.DataVolumeBlankImage{}},
			Storage: &cdiv1.StorageSpec{Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}}
	if err := cl.c.Create(context.Background(), dv); err != nil {
		t.Fatal(err)
	}
	return dv
}

// withDataVolume gives a VMI a disk of the DataVolume "disk".
func withDataVolume(v *virtv1.VirtualMachineInstance) {
	v.Spec.Domain.Devices.Disks = append(v.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "disk"})
	v.Spec.Volumes = append(v.Spec.Volumes, virtv1.Volume{Name: "disk", VolumeSource: virtv1.VolumeSource{
		DataVolume: &virtv1.DataVolumeSource{Name: "disk"}}})
}

// testWaitsForDataVolume: a VMI with a dataVolume volume gets no launcher
// pod while its DataVolume fills, and gets one once it has Succeeded (the
// DataVolume's change wakes the VMI).
func testWaitsForDataVolume(t *testing.T, cl *cluster) {
	ctx := context.Background()
	ns := cl.namespace(t, "dvwait")
	dv := cl.blankDataVolume(t, ns)
	dv.Status.Phase = cdiv1.ImportInProgress
	if err := cl.c.Status().Update(ctx, dv); err != nil {
		t.Fatal(err)
	}
	key := cl.createVMI(t, ns, withDataVolume)
	dvsReady := func(s corev1.ConditionStatus) func(*virtv1.VirtualMachineInstance) bool {
		return func(v *virtv1.VirtualMachineInstance) bool {
			for _, c := range v.Status.Conditions {
				if c.Type == virtv1.VirtualMachineInstanceDataVolumesReady {
					return c.Status == s
				}
			}
			return false
		}
	}
	// The DataVolume has no Ready condition yet: Unknown, as KubeVirt.
	cl.waitVMI(t, key, "DataVolumesReady Unknown", dvsReady(corev1.ConditionUnknown))
	testenv.Consistently(testenv.Within(t, 2*time.Second), t, 100*time.Millisecond, "no launcher pod while the DataVolume fills", func() (bool, string) {
		pods := cl.pods(t, ns)
		return len(pods) == 0, fmt.Sprintf("%d pods", len(pods))
	})
	dv.Status.Phase = cdiv1.Succeeded
	dv.Status.Conditions = []cdiv1.DataVolumeCondition{{Type: cdiv1.DataVolumeReady, Status: corev1.ConditionTrue}}
	if err := cl.c.Status().Update(ctx, dv); err != nil {
		t.Fatal(err)
	}
	pod := cl.waitPod(t, ns)
	cl.waitVMI(t, key, "DataVolumesReady True", dvsReady(corev1.ConditionTrue))
	found := false
	for _, v := range pod.Spec.Volumes {
		found = found || (v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "disk")
	}
	if !found {
		t.Errorf("launcher pod volumes %+v: no claim disk", pod.Spec.Volumes)
	}
}

// testProvisionsForFirstConsumer: while a DataVolume waits for its first
// consumer, the VMI gets a provisioning pod instead of its launcher pod,
// as KubeVirt's: the launcher pod's volumes and placement, a command that
// only exits, annotated kubevirt.io/ephemeral-provisioning. The VMI stays
// Pending with Provisioning True and shows the pod's scheduling trouble.
// Once the DataVolume is filling, the provisioning pod goes; once it has
// Succeeded, the launcher pod comes.
func testProvisionsForFirstConsumer(t *testing.T, cl *cluster) {
	ctx := context.Background()
	ns := cl.namespace(t, "wffc")
	dv := cl.blankDataVolume(t, ns)
	setPhase := func(p cdiv1.DataVolumePhase) {
		t.Helper()
		dv.Status.Phase = p
		if err := cl.c.Status().Update(ctx, dv); err != nil {
			t.Fatal(err)
		}
	}
	setPhase(cdiv1.WaitForFirstConsumer)
	key := cl.createVMI(t, ns, withDataVolume)
	temp := cl.waitPod(t, ns)
	if !IsProvisioningPod(temp) || temp.Annotations[virtv1.EphemeralProvisioningObject] != "true" {
		t.Errorf("pod annotations %v, want %s=true", temp.Annotations, virtv1.EphemeralProvisioningObject)
	}
	c := temp.Spec.Containers[0]
	if d := cmp.Diff([]string{contract.Binary, "--" + contract.FlagBindOnly}, c.Command); d != "" || c.ReadinessProbe != nil {
		t.Errorf("provisioning pod command (-want +got):\n%s; readiness probe %v, want none", d, c.ReadinessProbe)
	}
	claimed := false
	for _, v := range temp.Spec.Volumes {
		claimed = claimed || (v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "disk")
	}
	if !claimed || temp.Spec.NodeSelector[virtv1.NodeSchedulable] != "true" {
		t.Errorf("provisioning pod volumes %+v, node selector %v: want the launcher pod's", temp.Spec.Volumes, temp.Spec.NodeSelector)
	}
	cl.podStatus(t, temp, func(st *corev1.PodStatus) {
		st.Phase = corev1.PodPending
		st.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/1 nodes are available: 1 node(s) did not have enough free storage."}}
	})
	cl.waitVMI(t, key, "Pending, Provisioning, PodScheduled False from the provisioning pod", func(v *virtv1.VirtualMachineInstance) bool {
		var prov, sched bool
		for _, c := range v.Status.Conditions {
			prov = prov || (c.Type == virtv1.VirtualMachineInstanceProvisioning && c.Status == corev1.ConditionTrue)
			sched = sched || (c.Type == PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable)
		}
		return v.Status.Phase == virtv1.Pending && v.Status.NodeName == "" && prov && sched
	})
	// The scheduler binds the pod (and with it the claim); it runs and exits.
	cl.bind(t, temp, "node1")
	cl.podStatus(t, temp, func(st *corev1.PodStatus) {
		st.Phase = corev1.PodSucceeded
		st.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
	})
	cl.waitVMI(t, key, "PodScheduled False gone, still Pending", func(v *virtv1.VirtualMachineInstance) bool {
		for _, c := range v.Status.Conditions {
			if c.Type == PodScheduled {
				return false
			}
		}
		return v.Status.Phase == virtv1.Pending
	})
	setPhase(cdiv1.ImportInProgress)
	eventually(t, "the provisioning pod deleted, no launcher pod while the DataVolume fills", func() (bool, string) {
		pods := cl.pods(t, ns)
		return len(pods) == 0, fmt.Sprintf("%d pods", len(pods))
	})
	setPhase(cdiv1.Succeeded)
	pod := cl.waitPod(t, ns)
	if IsProvisioningPod(pod) || slices.Contains(pod.Spec.Containers[0].Command, "--"+contract.FlagBindOnly) {
		t.Errorf("pod %s annotations %v command %v: want the launcher pod", pod.Name, pod.Annotations, pod.Spec.Containers[0].Command)
	}
	cl.waitVMI(t, key, "Scheduling, Provisioning gone", func(v *virtv1.VirtualMachineInstance) bool {
		for _, c := range v.Status.Conditions {
			if c.Type == virtv1.VirtualMachineInstanceProvisioning {
				return false
			}
		}
		return v.Status.Phase == virtv1.Scheduling
	})
}

// TestSetDataVolumesCondition: KubeVirt's aggregation of the DataVolumes'
// Ready conditions into the VMI's DataVolumesReady.
func TestSetDataVolumesCondition(t *testing.T) {
	t0, t1 := metav1.Unix(1_800_000_000, 0), metav1.Unix(1_800_000_060, 0)
	dv := func(ready ...corev1.ConditionStatus) *cdiv1.DataVolume {
		d := &cdiv1.DataVolume{}
		for _, s := range ready {
			d.Status.Conditions = append(d.Status.Conditions, cdiv1.DataVolumeCondition{Type: cdiv1.DataVolumeReady, Status: s})
		}
		return d
	}
	cond := func(s corev1.ConditionStatus, reason, msg string, at metav1.Time) []virtv1.VirtualMachineInstanceCondition {
		return []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstanceDataVolumesReady, Status: s, Reason: reason, Message: msg, LastTransitionTime: at}}
	}
	for _, tc := range []struct {
		name string
		old  []virtv1.VirtualMachineInstanceCondition
		dvs  []*cdiv1.DataVolume
		want []virtv1.VirtualMachineInstanceCondition
	}{
		{name: "no DataVolume"},
		{name: "all ready", dvs: []*cdiv1.DataVolume{dv(corev1.ConditionTrue), dv(corev1.ConditionTrue)},
			want: cond(corev1.ConditionTrue, "AllDVsReady", "All of the VMI's DVs are bound and ready", t1)},
		{name: "one not yet", dvs: []*cdiv1.DataVolume{dv(corev1.ConditionTrue), dv(corev1.ConditionFalse)},
			want: cond(corev1.ConditionFalse, "NotAllDVsReady", "Not all of the VMI's DVs are ready", t1)},
		{name: "one without a status", dvs: []*cdiv1.DataVolume{dv(corev1.ConditionTrue), dv()},
			want: cond(corev1.ConditionUnknown, "NotAllDVsReady", "Not all of the VMI's DVs are ready", t1)},
		{name: "False wins over Unknown", dvs: []*cdiv1.DataVolume{dv(), dv(corev1.ConditionFalse)},
			want: cond(corev1.ConditionFalse, "NotAllDVsReady", "Not all of the VMI's DVs are ready", t1)},
		{name: "unchanged keeps its time", old: cond(corev1.ConditionTrue, "AllDVsReady", "All of the VMI's DVs are bound and ready", t0),
			dvs: []*cdiv1.DataVolume{dv(corev1.ConditionTrue)}, want: cond(corev1.ConditionTrue, "AllDVsReady", "All of the VMI's DVs are bound and ready", t0)},
		{name: "became ready", old: cond(corev1.ConditionFalse, "NotAllDVsReady", "Not all of the VMI's DVs are ready", t0),
			dvs: []*cdiv1.DataVolume{dv(corev1.ConditionTrue)}, want: cond(corev1.ConditionTrue, "AllDVsReady", "All of the VMI's DVs are bound and ready", t1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := virtv1.VirtualMachineInstanceStatus{Conditions: tc.old}
			SetDataVolumesCondition(&st, tc.dvs, t1)
			if diff := cmp.Diff(tc.want, st.Conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}
