package handler

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultHeartbeatInterval is how often Heartbeat marks the node, as
// KubeVirt's virt-handler does.
const DefaultHeartbeatInterval = time.Minute

// Heartbeat marks the handler's node as one that launchers may be placed
// on, as KubeVirt's virt-handler does: the label kubevirt.io/schedulable=true
// (which every launcher pod's node selector asks for) and the annotation
// kubevirt.io/heartbeat with the time, every Interval. When its context
// ends it sets the label to "false", so that no new launcher is placed on a
// node whose handler stopped. Failed patches are logged and tried again at
// the next beat. It is a controller-runtime manager.Runnable.
type Heartbeat struct {
	Client client.Client
	Node   string
	// Interval between beats; default DefaultHeartbeatInterval.
	Interval time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	Log logr.Logger
}

// Start beats until ctx ends, then marks the node unschedulable.
func (h Heartbeat) Start(ctx context.Context) error {
	if h.Interval == 0 {
		h.Interval = DefaultHeartbeatInterval
	}
	if h.Now == nil {
		h.Now = time.Now
	}
	if h.Log.GetSink() == nil {
		h.Log = logr.Discard()
	}
	tick := time.NewTicker(h.Interval)
	defer tick.Stop()
	for {
		if err := h.mark(ctx, true); err != nil {
			h.Log.Error(err, "heartbeat", "node", h.Node)
		}
		select {
		case <-ctx.Done():
			end, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := h.mark(end, false); err != nil {
				h.Log.Error(err, "marking the node unschedulable on the way out", "node", h.Node)
			}
			return nil
		case <-tick.C:
		}
	}
}

// mark patches the node's schedulable label and heartbeat annotation.
func (h Heartbeat) mark(ctx context.Context, schedulable bool) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"labels":      map[string]string{virtv1.NodeSchedulable: fmt.Sprint(schedulable)},
		"annotations": map[string]string{virtv1.VirtHandlerHeartbeat: h.Now().UTC().Format(time.RFC3339)},
	}})
	if err != nil {
		return err
	}
	node := &corev1.Node{}
	node.Name = h.Node
	if err := h.Client.Patch(ctx, node, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("handler: node %s: heartbeat: %w", h.Node, err)
	}
	return nil
}
