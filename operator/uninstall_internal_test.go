package operator

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/internal/scheme"
)

// A CR deleted before it was Deployed passes the deletion webhook (as in
// KubeVirt, which judges only Deployed CRs); its finalizer then holds the
// uninstall while a VM exists, with KubeVirt's message, and touches
// nothing.
func TestUninstallHeldByWorkloads(t *testing.T) {
	ctx := context.Background()
	now := metav1.NewTime(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC))
	kv := &virtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt", Finalizers: []string{Finalizer},
		DeletionTimestamp: &now}, Spec: virtv1.KubeVirtSpec{UninstallStrategy: virtv1.KubeVirtUninstallStrategyBlockUninstallIfWorkloadsExist},
		Status: virtv1.KubeVirtStatus{Phase: virtv1.KubeVirtPhaseDeploying}}
	vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm1"}}
	managed := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: ConfigMapCA,
		Labels: map[string]string{ManagedByLabel: ManagedByValue}}}
	cl := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(kv, vm, managed).WithStatusSubresource(kv).Build()
	r, err := New(Settings{Namespace: "kubevirt", Registry: "quay.test/virtkit", Tag: "v1"}, WithClock(clocktesting.NewFakePassiveClock(now.Time)),
		WithRetry(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	r.client, r.reader = cl, cl

	res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(kv)})
	if err != nil || res.RequeueAfter != time.Second {
		t.Fatalf("Reconcile = %+v, %v; want a look again after the retry interval", res, err)
	}
	got := &virtv1.KubeVirt{}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(kv), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != virtv1.KubeVirtPhaseDeleting || len(got.Finalizers) != 1 {
		t.Errorf("phase %s, finalizers %v; want Deleting, held", got.Status.Phase, got.Finalizers)
	}
	var sync *virtv1.KubeVirtCondition
	for i := range got.Status.Conditions {
		if got.Status.Conditions[i].Type == virtv1.KubeVirtConditionSynchronized {
			sync = &got.Status.Conditions[i]
		}
	}
	want := "Rejecting the uninstall request, since there are still Virtual Machines present."
	if sync == nil || sync.Status != corev1.ConditionFalse || sync.Reason != ReasonDeletionFailed || !strings.Contains(sync.Message, want) {
		t.Errorf("Synchronized condition %+v; want False/%s containing %q", sync, ReasonDeletionFailed, want)
	}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(managed), &corev1.ConfigMap{}); err != nil {
		t.Errorf("a blocked uninstall deleted %s: %v", ConfigMapCA, err)
	}
}
