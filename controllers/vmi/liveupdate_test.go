package vmi

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/conditions"
)

// A VMI that can grow gets a launcher pod that says what it was sized for;
// one that cannot, none.
func TestRenderPodSizeAnnotations(t *testing.T) {
	opts := PodOptions{LauncherImage: "virt-launcher:test"}
	fixed, err := RenderPod(newVMI(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fixed.Annotations[AnnSizedVCPUs]; ok {
		t.Errorf("a VMI that cannot grow has a pod annotated %v", fixed.Annotations)
	}
	grows := newVMI(func(v *virtv1.VirtualMachineInstance) {
		v.Spec.Domain.CPU = &virtv1.CPU{Sockets: 2, MaxSockets: 4}
		v.Spec.Domain.Memory = &virtv1.Memory{Guest: new(resource.MustParse("256Mi")), MaxGuest: new(resource.MustParse("1Gi"))}
	})
	pod, err := RenderPod(grows, opts)
	if err != nil {
		t.Fatal(err)
	}
	if v, m := SizedFor(pod); v != 2 || m != 256<<20 {
		t.Errorf("SizedFor = %d vCPUs, %d bytes; want 2, 256 MiB", v, m)
	}
}

// HotVCPUChange and HotMemoryChange say, as KubeVirt's, that a running
// VMI's spec asks for other vCPUs or memory than its status reports, with
// whether its pod is big enough already.
func TestHotplugConditions(t *testing.T) {
	grown := func(sockets uint32, guest string) *virtv1.VirtualMachineInstance {
		return newVMI(phase(virtv1.Running), func(v *virtv1.VirtualMachineInstance) {
			v.Status.NodeName = "node-a"
			v.Spec.Domain.CPU = &virtv1.CPU{Sockets: sockets, MaxSockets: 4}
			v.Spec.Domain.Memory = &virtv1.Memory{Guest: new(resource.MustParse(guest)), MaxGuest: new(resource.MustParse("1Gi"))}
			v.Status.CurrentCPUTopology = &virtv1.CPUTopology{Sockets: 1, Cores: 1, Threads: 1}
			v.Status.Memory = &virtv1.MemoryStatus{GuestRequested: new(resource.MustParse("256Mi"))}
		})
	}
	sizedFor := func(vcpus, mem string) podOpt {
		return func(p *corev1.Pod) {
			p.Annotations = map[string]string{AnnSizedVCPUs: vcpus, AnnSizedGuestMemory: mem}
		}
	}
	type cond struct {
		Type   virtv1.VirtualMachineInstanceConditionType
		Reason string
	}
	for _, tc := range []struct {
		name string
		vmi  *virtv1.VirtualMachineInstance
		pod  *corev1.Pod
		want []cond
	}{
		{"as booted", grown(1, "256Mi"), newPod(onNode("node-a"), sizedFor("1", "268435456")), nil},
		{"grown past its pod", grown(2, "512Mi"), newPod(onNode("node-a"), sizedFor("1", "268435456")), []cond{
			{virtv1.VirtualMachineInstanceVCPUChange, ReasonHotplugMigrationRequired},
			{virtv1.VirtualMachineInstanceMemoryChange, ReasonHotplugMigrationRequired}}},
		{"on a pod sized for it", grown(2, "512Mi"), newPod(onNode("node-a"), sizedFor("2", "536870912")), []cond{
			{virtv1.VirtualMachineInstanceVCPUChange, ReasonHotplugPending},
			{virtv1.VirtualMachineInstanceMemoryChange, ReasonHotplugPending}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := NextStatus(tc.vmi, tc.pod, nil, t0)
			var got []cond
			for _, ty := range []virtv1.VirtualMachineInstanceConditionType{virtv1.VirtualMachineInstanceVCPUChange, virtv1.VirtualMachineInstanceMemoryChange} {
				if c := conditions.VMI().Find(st.Conditions, ty); c != nil && c.Status == corev1.ConditionTrue {
					got = append(got, cond{c.Type, c.Reason})
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("conditions (-want +got):\n%s", d)
			}
		})
	}
}

// A VMI grown past its pod waits for a migration; once a migration moved it
// to another pod, the condition that judged the old one no longer asks
// for one.
func TestGrowsByMigration(t *testing.T) {
	vmi := newVMI(phase(virtv1.Running), func(v *virtv1.VirtualMachineInstance) {
		v.Status.NodeName = "node-a"
		v.Spec.Domain.CPU = &virtv1.CPU{Sockets: 2, MaxSockets: 4}
		v.Status.CurrentCPUTopology = &virtv1.CPUTopology{Sockets: 1, Cores: 1, Threads: 1}
	})
	small := newPod(onNode("node-a"), func(p *corev1.Pod) { p.Annotations = map[string]string{AnnSizedVCPUs: "1"} })
	vmi.Status = NextStatus(vmi, small, nil, t0)
	if !GrowsByMigration(vmi) {
		t.Fatalf("a VMI grown past its pod does not wait for a migration: %+v", vmi.Status.Conditions)
	}
	vmi.Status.MigrationState = &virtv1.VirtualMachineInstanceMigrationState{Completed: true, TargetPod: "virt-launcher-vmi1-fghij"}
	if GrowsByMigration(vmi) {
		t.Error("a VMI that migrated away from the pod judged too small still asks for a migration")
	}
	vmi.Status.MigrationState.TargetPod = small.Name
	if !GrowsByMigration(vmi) {
		t.Error("a completed migration to the same pod hides the wait")
	}
}
