package handler_test

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/controllers/handler"
	"github.com/virtkit/virtkit/internal/scheme"
)

func TestHeartbeatMarksTheNodeAndUnmarksItOnTheWayOut(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}).Build()
	at := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- handler.Heartbeat{Client: c, Node: "n1", Interval: 10 * time.Millisecond, Now: func() time.Time { return at }}.Start(ctx)
	}()
	node := &corev1.Node{}
	deadline := time.Now().Add(10 * time.Second)
	for {
		assert.NilError(t, c.Get(context.Background(), client.ObjectKey{Name: "n1"}, node))
		if node.Labels[virtv1.NodeSchedulable] == "true" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node not marked schedulable: %v", node.Labels)
		}
		time.Sleep(5 * time.Millisecond)
	}
	assert.Equal(t, node.Annotations[virtv1.VirtHandlerHeartbeat], "2026-12-02T01:00:00Z")

	cancel()
	assert.NilError(t, <-done)
	assert.NilError(t, c.Get(context.Background(), client.ObjectKey{Name: "n1"}, node))
	assert.Equal(t, node.Labels[virtv1.NodeSchedulable], "false", "a stopped handler takes no new launchers")
}
