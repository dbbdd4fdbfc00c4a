package workloadupdate

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// VMI changes close together make one look, after the delay, not one each.
func TestBatchedGathersChanges(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "kubevirt", Name: "workload-update"}}
	h := batched(req, 200*time.Millisecond)
	ctx := context.Background()
	h.Create(ctx, event.CreateEvent{}, q)
	h.Update(ctx, event.UpdateEvent{}, q)
	h.Delete(ctx, event.DeleteEvent{}, q)
	if n := q.Len(); n != 0 {
		t.Fatalf("%d looks queued at once, want none before the delay", n)
	}
	time.Sleep(400 * time.Millisecond)
	if n := q.Len(); n != 1 {
		t.Fatalf("%d looks queued after the delay, want 1", n)
	}
	if got, _ := q.Get(); got != req {
		t.Errorf("queued %v, want %v", got, req)
	}
}
