package snapshot_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/snapshot"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
	vsnap "github.com/virtkit/virtkit/virt/storage/snapshot"
)

// freezer records the freeze and unfreeze calls.
type freezer struct {
	mu    sync.Mutex
	calls []string
}

func (f *freezer) Freeze(_ context.Context, ns, name string, limit time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("freeze %s/%s within %v", ns, name, limit > 30*time.Second && limit <= time.Minute))
	return nil
}

func (f *freezer) Unfreeze(_ context.Context, ns, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "unfreeze "+ns+"/"+name)
	return nil
}

func (f *freezer) recorded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// An online snapshot of a VM whose guest agent is connected says
// GuestAgent, freezes the guest (until at most its deadline) before it
// makes the VolumeSnapshot, and thaws it once the VolumeSnapshot is cut.
func TestOnlineSnapshotFreezes(t *testing.T) {
	env := kubeenv.ControlPlane(t)
	mgr := kubeenv.NewManager(t, env)
	fr := &freezer{}
	must(t, snapshot.NewSnapshotReconciler(snapshot.WithFreezer(fr)).SetupWithManager(mgr))
	kubeenv.RunManager(t, mgr)
	c := env.Client
	ctx := testenv.Within(t, 2*time.Minute)
	const ns = "default"

	vm := stoppedVMWithClaim(ctx, t, c, ns)
	vm.Spec.RunStrategy = ptr.To(virtv1.RunStrategyAlways)
	must(t, c.Update(ctx, vm))
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: vm.Name,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(vm, virtv1.VirtualMachineGroupVersionKind)}},
		Spec: vm.Spec.Template.Spec}
	must(t, c.Create(ctx, vmi))
	vmi.Status = virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Running, NodeName: "node-a",
		Conditions: []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstanceAgentConnected, Status: corev1.ConditionTrue}}}
	must(t, c.Status().Update(ctx, vmi))

	s := &vmsnapshotv1.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "frozen"},
		Spec: vmsnapshotv1.VirtualMachineSnapshotSpec{Source: corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: vm.Name},
			FailureDeadline: &metav1.Duration{Duration: time.Minute}}}
	must(t, c.Create(ctx, s))
	vs := &volumesnapshotv1.VolumeSnapshot{}
	testenv.Eventually(ctx, t, "the VolumeSnapshot made", func() (bool, string) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: vsnap.VolumeSnapshotName(s.UID, "data")}, vs)
		return err == nil, fmt.Sprint(err)
	})
	if d := cmp.Diff([]string{"freeze default/vm within true"}, fr.recorded()); d != "" {
		t.Errorf("before the cut (-want +got):\n%s", d)
	}
	now := metav1.Now()
	vs.Status = &volumesnapshotv1.VolumeSnapshotStatus{ReadyToUse: ptr.To(true), CreationTime: &now, RestoreSize: ptr.To(resource.MustParse("1Gi"))}
	must(t, c.Status().Update(ctx, vs))
	testenv.Eventually(ctx, t, "Succeeded", func() (bool, string) {
		must(t, c.Get(ctx, client.ObjectKeyFromObject(s), s))
		return s.Status != nil && s.Status.Phase == vmsnapshotv1.Succeeded, fmt.Sprintf("%+v", s.Status)
	})
	if d := cmp.Diff([]string{"freeze default/vm within true", "unfreeze default/vm"}, fr.recorded()); d != "" {
		t.Errorf("after the cut (-want +got):\n%s", d)
	}
	//lint:ignore SA1019 KubeVirt still writes status.indications
	if got := fmt.Sprint(s.Status.Indications); got != "[GuestAgent Online]" {
		t.Errorf("indications %s, want [GuestAgent Online]", got)
	}
}
