package admission_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virtapi/admission"
)

// Snapshots name a VM and keep their spec; restores name a VM and a
// snapshot that exists, never write a running VM unless told to stop or
// wait for it, carry JSON patches of the spec only, and keep their spec.
func TestSnapshotsAndRestoresAreValidated(t *testing.T) {
	vmRef := corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "db"}
	snap := func(ref corev1.TypedLocalObjectReference) *vmsnapshotv1.VirtualMachineSnapshot {
		return &vmsnapshotv1.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "s1", Namespace: "default"},
			Spec: vmsnapshotv1.VirtualMachineSnapshotSpec{Source: ref}}
	}
	restore := func(target string, mod func(*vmsnapshotv1.VirtualMachineRestore)) *vmsnapshotv1.VirtualMachineRestore {
		r := &vmsnapshotv1.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Name: "r1", Namespace: "default"},
			Spec: vmsnapshotv1.VirtualMachineRestoreSpec{Target: corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: target},
				VirtualMachineSnapshotName: "s1"}}
		if mod != nil {
			mod(r)
		}
		return r
	}
	objs := []client.Object{
		snap(vmRef),
		&virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"}},
		&virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"}, Status: virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Running}},
		&virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "stopped", Namespace: "default"}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build()
	v := admission.NewValidator(scheme.New(), admission.WithSnapshots(c))
	for _, tc := range []struct {
		name     string
		obj, old runtime.Object
		want     []string
	}{
		{"a snapshot of a VM", snap(vmRef), nil, nil},
		{"a snapshot of a pod", snap(corev1.TypedLocalObjectReference{APIGroup: ptr.To(""), Kind: "Pod", Name: "p"}), nil,
			[]string{"FieldValueNotSupported spec.source.apiGroup", "FieldValueNotSupported spec.source.kind"}},
		{"a snapshot without a group", snap(corev1.TypedLocalObjectReference{Kind: "VirtualMachine", Name: "db"}), nil, []string{"FieldValueRequired spec.source.apiGroup"}},
		{"a snapshot's spec changed", snap(corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "other"}), snap(vmRef),
			[]string{"FieldValueForbidden spec"}},
		{"a restore onto a stopped VM", restore("stopped", nil), nil, nil},
		{"a restore to a new VM with a patch", restore("new", func(r *vmsnapshotv1.VirtualMachineRestore) {
			r.Spec.Patches = []string{`{"op": "replace", "path": "/spec/runStrategy", "value": "Always"}`}
		}), nil, nil},
		{"a restore onto a running VM", restore("db", nil), nil, []string{"FieldValueInvalid spec.target"}},
		{"a restore that stops the running VM", restore("db", func(r *vmsnapshotv1.VirtualMachineRestore) {
			r.Spec.TargetReadinessPolicy = ptr.To(vmsnapshotv1.VirtualMachineRestoreStopTarget)
		}), nil, nil},
		{"a restore of a missing snapshot", restore("stopped", func(r *vmsnapshotv1.VirtualMachineRestore) { r.Spec.VirtualMachineSnapshotName = "gone" }), nil,
			[]string{"FieldValueNotFound spec.virtualMachineSnapshotName"}},
		{"a patch of the name, in place", restore("new", func(r *vmsnapshotv1.VirtualMachineRestore) {
			r.Spec.Patches = []string{`{"op": "replace", "path": "/metadata/name", "value": "x"}`}
			r.Spec.VolumeRestorePolicy = ptr.To(vmsnapshotv1.VolumeRestorePolicyInPlace)
		}), nil, []string{"FieldValueInvalid spec.patches[0].path"}},
		{"a restore in place", restore("stopped", func(r *vmsnapshotv1.VirtualMachineRestore) {
			r.Spec.VolumeRestorePolicy = ptr.To(vmsnapshotv1.VolumeRestorePolicyInPlace)
		}), nil, nil},
		{"an unknown volume restore policy", restore("stopped", func(r *vmsnapshotv1.VirtualMachineRestore) {
			r.Spec.VolumeRestorePolicy = ptr.To(vmsnapshotv1.VolumeRestorePolicy("Overwrite"))
		}), nil, []string{"FieldValueNotSupported spec.volumeRestorePolicy"}},
		{"a restore's spec changed", restore("other", nil), restore("stopped", nil), []string{"FieldValueForbidden spec"}},
	} {
		if diff := cmp.Diff(tc.want, refusals(t, v.Handle(context.Background(), review(t, "alice", tc.obj, tc.old)))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
