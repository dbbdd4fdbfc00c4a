package snapshot_test

import (
	"testing"

	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"

	"github.com/virtkit/virtkit/virt/storage/snapshot"
)

func TestVolumeSnapshotReady(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   *volumesnapshotv1.VolumeSnapshotStatus
		want bool
	}{
		{"no status", nil, false},
		{"readyToUse unset", &volumesnapshotv1.VolumeSnapshotStatus{}, false},
		{"not ready", &volumesnapshotv1.VolumeSnapshotStatus{ReadyToUse: ptr.To(false)}, false},
		{"ready", &volumesnapshotv1.VolumeSnapshotStatus{ReadyToUse: ptr.To(true)}, true},
	} {
		if got := snapshot.VolumeSnapshotReady(&volumesnapshotv1.VolumeSnapshot{Status: tc.st}); got != tc.want {
			t.Errorf("%s: VolumeSnapshotReady = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestReady(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   *vmsnapshotv1.VirtualMachineSnapshotStatus
		want bool
	}{
		{"no status", nil, false},
		{"not ready", &vmsnapshotv1.VirtualMachineSnapshotStatus{ReadyToUse: ptr.To(false), VirtualMachineSnapshotContentName: ptr.To("c")}, false},
		{"ready without content", &vmsnapshotv1.VirtualMachineSnapshotStatus{ReadyToUse: ptr.To(true)}, false},
		{"ready", &vmsnapshotv1.VirtualMachineSnapshotStatus{ReadyToUse: ptr.To(true), VirtualMachineSnapshotContentName: ptr.To("c")}, true},
	} {
		if got := snapshot.Ready(&vmsnapshotv1.VirtualMachineSnapshot{Status: tc.st}); got != tc.want {
			t.Errorf("%s: Ready = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestVolumeSnapshotSource(t *testing.T) {
	ds := snapshot.VolumeSnapshotSource("s1")
	if !snapshot.RestoresVolumeSnapshot(&ds) || ds.Name != "s1" {
		t.Errorf("VolumeSnapshotSource(s1) = %+v: not a VolumeSnapshot source named s1", ds)
	}
	for _, other := range []*corev1.TypedLocalObjectReference{
		nil,
		{Kind: "PersistentVolumeClaim", Name: "s1"},
		{APIGroup: ptr.To("example.com"), Kind: snapshot.VolumeSnapshotKind, Name: "s1"},
	} {
		if snapshot.RestoresVolumeSnapshot(other) {
			t.Errorf("RestoresVolumeSnapshot(%+v) = true, want false", other)
		}
	}
}
