package handler

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/launcher"
)

// A launcher's folder is its pod's emptyDir, found by the pod's role: the
// VMI's own pod, or a migration's target pod, on the handler's node and
// controlled by the VMI. A pod of the same labels that the VMI does not
// control, or on another node, is never taken for it.
func TestLauncherFolderIsThePodsEmptyDir(t *testing.T) {
	yes := true
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm1", UID: "vmi-uid"}}
	owner := []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: "vm1", UID: vmi.UID, Controller: &yes}}
	pod := func(uid types.UID, node, migration string, owners []metav1.OwnerReference) client.Object {
		labels := map[string]string{virtv1.CreatedByLabel: string(vmi.UID)}
		if migration != "" {
			labels[virtv1.MigrationJobLabel] = migration
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "virt-launcher-" + string(uid), UID: uid, Labels: labels, OwnerReferences: owners},
			Spec: corev1.PodSpec{NodeName: node}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(
		pod("own", "node-a", "", owner),
		pod("target", "node-a", "mig-1", owner),
		pod("elsewhere", "node-b", "mig-2", owner),
		pod("forged", "node-a", "mig-3", nil), // labelled as the VMI's, not controlled by it
	).Build()
	r, err := New(Config{NodeName: "node-a", PodsDir: "/kubelet/pods"}, WithClient(c, c),
		WithConnector(func(context.Context, string) (domain.Manager, error) { return nil, errors.New("unused") }))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		folder types.UID
		want   launcher.Layout
		err    error
	}{
		{folder: vmi.UID, want: launcher.Layout{Root: "/kubelet/pods/own/volumes/kubernetes.io~empty-dir/virtkit-run"}},
		{folder: "mig-1", want: launcher.Layout{Root: "/kubelet/pods/target/volumes/kubernetes.io~empty-dir/virtkit-run"}},
		{folder: "mig-2", err: errNoLauncherPod}, // on another node
		{folder: "mig-3", err: errNoLauncherPod}, // not the VMI's
	} {
		got, err := r.hostLayout(ctx, vmi, tc.folder)
		if !errors.Is(err, tc.err) {
			t.Errorf("folder %s: error %v, want %v", tc.folder, err, tc.err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("folder %s (-want +got):\n%s", tc.folder, diff)
		}
	}
	// The source's handler finds a target pod on another node the same way.
	if got, err := r.launcherPod(ctx, vmi, "mig-2", "node-b"); err != nil || got != "elsewhere" {
		t.Errorf("target pod on node-b: %q, %v", got, err)
	}
	// Found once, a pod is remembered until its VMI is forgotten.
	if err := c.Delete(ctx, pod("own", "node-a", "", owner)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.hostLayout(ctx, vmi, vmi.UID); err != nil {
		t.Errorf("a found pod is remembered: %v", err)
	}
	r.pods.forget(types.NamespacedName{Namespace: "ns", Name: "vm1"})
	if _, err := r.hostLayout(ctx, vmi, vmi.UID); !errors.Is(err, errNoLauncherPod) {
		t.Errorf("after forget, a deleted pod: %v, want %v", err, errNoLauncherPod)
	}
}
