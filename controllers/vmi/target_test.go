package vmi

import (
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
)

const migUID = "4b5c6d7e-0000-4000-8000-0000000000aa"

func newMigration() *virtv1.VirtualMachineInstanceMigration {
	return &virtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Name: "mig1", Namespace: "default", UID: migUID},
		Spec:       virtv1.VirtualMachineInstanceMigrationSpec{VMIName: "vmi1", AddedNodeSelector: map[string]string{"zone": "b", "kubevirt.io/schedulable": "no"}},
	}
}

func TestRenderTargetPod(t *testing.T) {
	vmi := newVMI(func(v *virtv1.VirtualMachineInstance) {
		v.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}},
				{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"nvme"}}}},
			}}}}
	})
	source, err := RenderPod(vmi, tcgOpts)
	assert.NilError(t, err)
	pod, err := RenderTargetPod(vmi, newMigration(), "node-a", tcgOpts)
	assert.NilError(t, err)

	assert.Equal(t, pod.Labels[virtv1.MigrationJobLabel], migUID)
	assert.Equal(t, pod.Labels[virtv1.CreatedByLabel], testUID)
	assert.Assert(t, IsTargetPod(pod) && !IsTargetPod(source))
	assert.Equal(t, RoleOf(vmi, pod), types.UID(migUID))
	assert.Equal(t, RoleOf(vmi, source), vmi.UID)
	// The pod sees its own folder, an emptyDir, where the source pod sees its own.
	assert.DeepEqual(t, pod.Spec.Volumes[0], corev1.Volume{Name: runVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	assert.DeepEqual(t, pod.Spec.Volumes[0], source.Spec.Volumes[0])
	assert.Equal(t, pod.Spec.Containers[0].VolumeMounts[0].MountPath, source.Spec.Containers[0].VolumeMounts[0].MountPath)
	assert.DeepEqual(t, pod.Spec.Containers[0].Command, source.Spec.Containers[0].Command)

	// The migration's selector narrows, it does not override.
	assert.Equal(t, pod.Spec.NodeSelector["zone"], "b")
	assert.Equal(t, pod.Spec.NodeSelector[virtv1.NodeSchedulable], "true")
	// Every required term of the VMI keeps its own condition and gains "not the source".
	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	assert.Equal(t, len(terms), 2)
	for _, term := range terms {
		assert.Equal(t, len(term.MatchExpressions), 1)
		assert.DeepEqual(t, term.MatchFields, []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"node-a"}}})
	}
	assert.Equal(t, len(vmi.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields), 0, "the VMI is not changed")

	plain, err := RenderTargetPod(newVMI(), newMigration(), "node-a", tcgOpts)
	assert.NilError(t, err)
	assert.DeepEqual(t, plain.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms,
		[]corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"node-a"}}}}})

	_, err = RenderTargetPod(newVMI(), newMigration(), "", tcgOpts)
	assert.ErrorContains(t, err, "source node")
	noUID := newMigration()
	noUID.UID = ""
	_, err = RenderTargetPod(newVMI(), noUID, "node-a", tcgOpts)
	assert.ErrorContains(t, err, "VirtualMachineInstanceMigration default/mig1: metadata.uid: must be set")
}

func TestIsCurrentPod(t *testing.T) {
	onNode := func(node string, target bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{virtv1.CreatedByLabel: testUID}}, Spec: corev1.PodSpec{NodeName: node}}
		if target {
			p.Labels[virtv1.MigrationJobLabel] = migUID
		}
		return p
	}
	vmiOn := func(node string, ms *virtv1.VirtualMachineInstanceMigrationState) *virtv1.VirtualMachineInstance {
		return newVMI(func(v *virtv1.VirtualMachineInstance) { v.Status.NodeName, v.Status.MigrationState = node, ms })
	}
	running := &virtv1.VirtualMachineInstanceMigrationState{MigrationUID: migUID, SourceNode: "a", TargetNode: "b"}
	done := &virtv1.VirtualMachineInstanceMigrationState{MigrationUID: migUID, SourceNode: "a", TargetNode: "b", Completed: true}
	failed := &virtv1.VirtualMachineInstanceMigrationState{MigrationUID: migUID, SourceNode: "a", TargetNode: "b", Completed: true, Failed: true}
	later := &virtv1.VirtualMachineInstanceMigrationState{MigrationUID: "another", SourceNode: "b", TargetNode: "c"}
	for _, c := range []struct {
		name string
		vmi  *virtv1.VirtualMachineInstance
		pod  *corev1.Pod
		want bool
	}{
		{"first pod, not scheduled", vmiOn("", nil), onNode("", false), true},
		{"first pod, scheduled", vmiOn("", nil), onNode("a", false), true},
		{"first pod, running there", vmiOn("a", nil), onNode("a", false), true},
		{"first pod while migrating", vmiOn("a", running), onNode("a", false), true},
		{"target pod while migrating", vmiOn("a", running), onNode("b", true), false},
		{"target pod of a failed migration", vmiOn("a", failed), onNode("b", true), false},
		{"source pod after the migration", vmiOn("b", done), onNode("a", false), false},
		{"target pod after the migration", vmiOn("b", done), onNode("b", true), true},
		{"target pod, completed, not yet taken over", vmiOn("a", done), onNode("b", true), false},
		{"target pod of an earlier migration, source of the next", vmiOn("b", later), onNode("b", true), true},
	} {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, IsCurrentPod(c.vmi, c.pod), c.want) })
	}
}
