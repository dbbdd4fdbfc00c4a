package vm

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/internal/scheme"
)

// A VM whose run strategy is invalid gets a FailedCreate Warning naming
// the fields, once: the reconciles that follow see its Failure condition
// already say so.
func TestInvalidRunStrategyWarnsOnce(t *testing.T) {
	vm := newVM(running(true), strategy(virtv1.RunStrategyAlways))
	vm.Finalizers = []string{Finalizer}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithStatusSubresource(&virtv1.VirtualMachine{}).WithObjects(vm).Build()
	rec := record.NewFakeRecorder(10)
	r := New(WithClient(c, c), WithEventRecorder(rec), WithClock(clocktesting.NewFakeClock(t0)))
	for range 3 {
		// Terminal: the error says so; the reconcile itself is what is tested.
		_, _ = r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(vm)})
	}
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "Warning FailedCreate ") || !strings.Contains(got[0], "spec.running and spec.runStrategy") {
		t.Errorf("events %q, want one FailedCreate naming spec.running and spec.runStrategy", got)
	}
}
