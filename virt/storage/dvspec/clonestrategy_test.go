package dvspec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
)

func TestChooseClone(t *testing.T) {
	claim := func(ns, size string, block bool) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}}
		c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resourceOf(size)}
		c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resourceOf(size)}
		if block {
			c.Spec.VolumeMode = ptrTo(corev1.PersistentVolumeBlock)
		}
		return c
	}
	facts := func(strategy cdiv1.CDICloneStrategy, change ...func(*CloneFacts)) CloneFacts {
		f := CloneFacts{Strategy: &strategy, SnapshotClass: "snaps", Source: claim("ns", "1Gi", false), SourceClass: "fast", SourceProvisioner: "csi.example.com",
			Target: claim("ns", "1Gi", false), TargetClass: "fast", TargetProvisioner: "csi.example.com"}
		if strategy == "" {
			f.Strategy = nil
		}
		for _, c := range change {
			c(&f)
		}
		return f
	}
	copied := func(reason, msg string) CloneChoice {
		return CloneChoice{Strategy: cdiv1.CloneStrategyHostAssisted, FallbackReason: reason, FallbackMessage: msg}
	}
	for _, tc := range []struct {
		name string
		f    CloneFacts
		want CloneChoice
	}{
		{"no profile strategy copies", facts(""), copied("", "")},
		{"copy", facts(cdiv1.CloneStrategyHostAssisted), copied("", "")},
		{"csi-clone", facts(cdiv1.CloneStrategyCsiClone), CloneChoice{Strategy: cdiv1.CloneStrategyCsiClone}},
		{"snapshot", facts(cdiv1.CloneStrategySnapshot), CloneChoice{Strategy: cdiv1.CloneStrategySnapshot}},
		{"snapshot without a snapshot class", facts(cdiv1.CloneStrategySnapshot, func(f *CloneFacts) { f.SnapshotClass = "" }),
			copied(ReasonNoVolumeSnapshotClass, messageNoVolumeSnapshotClass)},
		{"csi-clone needs no snapshot class", facts(cdiv1.CloneStrategyCsiClone, func(f *CloneFacts) { f.SnapshotClass = "" }),
			CloneChoice{Strategy: cdiv1.CloneStrategyCsiClone}},
		{"a CSI clone into another namespace", facts(cdiv1.CloneStrategyCsiClone, func(f *CloneFacts) { f.Source.Namespace = "other" }),
			CloneChoice{Strategy: cdiv1.CloneStrategyCsiClone}},
		{"a snapshot clone into another namespace is copied", facts(cdiv1.CloneStrategySnapshot, func(f *CloneFacts) { f.Source.Namespace = "other" }), copied("", "")},
		{"a class binding on first consumer is copied", facts(cdiv1.CloneStrategyCsiClone, func(f *CloneFacts) { f.BindsOnFirstConsumer = true }), copied("", "")},
		{"a class binding on a workload's first consumer is cloned", facts(cdiv1.CloneStrategyCsiClone, func(f *CloneFacts) {
			f.BindsOnFirstConsumer, f.HonorsFirstConsumer = true, true
		}), CloneChoice{Strategy: cdiv1.CloneStrategyCsiClone}},
		{"a snapshot clone binding on a workload's first consumer", facts(cdiv1.CloneStrategySnapshot, func(f *CloneFacts) {
			f.BindsOnFirstConsumer, f.HonorsFirstConsumer = true, true
		}), CloneChoice{Strategy: cdiv1.CloneStrategySnapshot}},
		{"across namespaces into a class binding on first consumer is copied", facts(cdiv1.CloneStrategyCsiClone, func(f *CloneFacts) {
			f.BindsOnFirstConsumer, f.HonorsFirstConsumer = true, true
			f.Target.Namespace = "other"
		}), copied("", "")},
		{"other drivers", facts(cdiv1.CloneStrategyCsiClone, func(f *CloneFacts) { f.SourceProvisioner = "nfs.example.com" }),
			copied(ReasonIncompatibleProvisioners, messageIncompatibleProvisioners)},
		{"source class unknown", facts(cdiv1.CloneStrategySnapshot, func(f *CloneFacts) { f.SourceProvisioner = "" }),
			copied(ReasonIncompatibleProvisioners, messageIncompatibleProvisioners)},
		{"csi-clone into another class", facts(cdiv1.CloneStrategyCsiClone, func(f *CloneFacts) { f.TargetClass = "slow" }),
			copied(ReasonIncompatibleProvisioners, messageOtherClass)},
		{"snapshot into another class of the driver", facts(cdiv1.CloneStrategySnapshot, func(f *CloneFacts) { f.TargetClass = "slow" }),
			CloneChoice{Strategy: cdiv1.CloneStrategySnapshot}},
		{"block into filesystem", facts(cdiv1.CloneStrategyCsiClone, func(f *CloneFacts) { f.Source = claim("ns", "1Gi", true) }),
			copied(ReasonIncompatibleVolumeModes, messageIncompatibleVolumeModes)},
		{"block into block", facts(cdiv1.CloneStrategyCsiClone, func(f *CloneFacts) { f.Source, f.Target = claim("ns", "1Gi", true), claim("ns", "1Gi", true) }),
			CloneChoice{Strategy: cdiv1.CloneStrategyCsiClone}},
		{"larger target, class expands", facts(cdiv1.CloneStrategyCsiClone, func(f *CloneFacts) { f.Target, f.AllowExpansion = claim("ns", "2Gi", false), true }),
			CloneChoice{Strategy: cdiv1.CloneStrategyCsiClone}},
		{"larger target, class does not expand", facts(cdiv1.CloneStrategySnapshot, func(f *CloneFacts) { f.Target = claim("ns", "2Gi", false) }),
			copied(ReasonNoVolumeExpansion, messageNoVolumeExpansion)},
		{"smaller target", facts(cdiv1.CloneStrategyCsiClone, func(f *CloneFacts) { f.Target, f.AllowExpansion = claim("ns", "512Mi", false), true }),
			copied(ReasonIncompatiblePVC, messageSmallerTarget)},
		{"an unknown strategy copies", facts("teleport"), copied("", "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ChooseClone(tc.f)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("ChooseClone (-want +got):\n%s", d)
			}
			if got.Smart() != (got.Strategy != cdiv1.CloneStrategyHostAssisted) {
				t.Errorf("Smart() = %t for %q", got.Smart(), got.Strategy)
			}
		})
	}
}
