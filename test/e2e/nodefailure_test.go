package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/nodehealth"
	"github.com/virtkit/virtkit/internal/localcluster"
)

// A node that fails as a machine does (its handler and its local node
// stop, its pods' processes end unreported): once its Node is NotReady past
// the grace period and its handler's heartbeat is stale, virt-controller
// fails the VMI there with reason NodeUnresponsive naming the node, and
// the VM (runStrategy Always) runs again on the other node. When the node
// comes back, nothing of the old VMI is left on it (no process, pod folder
// or mount), and its handler beats again.
func TestNodeFailure(t *testing.T) {
	a, b := nodeName("a"), nodeName("b")
	w := worldOf(t, localcluster.ForTest(t, localcluster.Options{Nodes: []string{a, b}, HeartbeatInterval: 2 * time.Second,
		NodeHealth: nodehealth.Options{HeartbeatTimeout: 10 * time.Second, NotReadyGrace: 5 * time.Second, Recheck: 2 * time.Second}}))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	vm, src, _ := w.tinyReady(ctx, t)
	failed, other := src.Status.NodeName, a
	if failed == a {
		other = b
	}
	w.waitNodeBeats(ctx, t, failed, time.Now())

	start := time.Now()
	must(t, w.cluster.CrashNode(ctx, failed))
	eventually(ctx, t, "the VMI on "+failed+" failed, NodeUnresponsive, naming the node", func() (bool, string) {
		var evs corev1.EventList
		must(t, w.c.List(ctx, &evs, client.InNamespace(vm.Namespace)))
		var seen []string
		for _, e := range evs.Items {
			if e.InvolvedObject.UID != src.UID {
				continue
			}
			seen = append(seen, e.Reason+": "+e.Message)
			if e.Reason == nodehealth.ReasonNodeUnresponsive && strings.Contains(e.Message, "node "+failed+" ") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("events of the VMI: %q", seen)
	})
	again := &virtv1.VirtualMachineInstance{}
	eventually(ctx, t, "the VM running again on "+other, func() (bool, string) {
		// Between the failed VMI's deletion and the new one's creation
		// there is none.
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(vm), again); err != nil {
			return false, err.Error()
		}
		return again.UID != src.UID && again.Status.Phase == virtv1.Running && again.Status.NodeName == other,
			fmt.Sprintf("VMI %s %s on %s", again.UID, again.Status.Phase, again.Status.NodeName)
	})
	t.Logf("%s failed at %s; the VM ran again on %s %s later", failed, start.Format("15:04:05"), again.Status.NodeName, time.Since(start).Round(time.Second))
	w.consoleShows(ctx, t, again, "VIRTKIT-HEARTBEAT")

	// The node comes back: nothing of the old VMI is left there.
	back := time.Now()
	must(t, w.cluster.RestartNode(ctx, failed))
	w.waitNodeBeats(ctx, t, failed, back)
	eventually(ctx, t, "nothing of the old VMI left on "+failed, func() (bool, string) {
		procs, err := launcherProcesses(string(src.UID))
		must(t, err)
		left := w.podFoldersLeft(ctx, t)
		return len(procs) == 0 && len(left) == 0, fmt.Sprintf("processes %v, pod folders %v", procs, left)
	})
	if v := w.vmiOf(ctx, t, vm); v.UID != again.UID || v.Status.Phase != virtv1.Running || v.Status.NodeName != other {
		t.Errorf("after %s came back: VMI %s %s on %s, want %s Running on %s", failed, v.UID, v.Status.Phase, v.Status.NodeName, again.UID, other)
	}
	w.deleteVM(ctx, t, vm)
}

// waitNodeBeats waits until node's handler beat after since and the node
// is schedulable for launchers.
func (w *world) waitNodeBeats(ctx context.Context, t *testing.T, node string, since time.Time) {
	t.Helper()
	eventually(ctx, t, "the handler of "+node+" beating", func() (bool, string) {
		var n corev1.Node
		must(t, w.c.Get(ctx, client.ObjectKey{Name: node}, &n))
		beat, err := time.Parse(time.RFC3339, n.Annotations[virtv1.VirtHandlerHeartbeat])
		return err == nil && !beat.Before(since.Truncate(time.Second)) && n.Labels[virtv1.NodeSchedulable] == "true",
			fmt.Sprintf("heartbeat %q, schedulable %q", n.Annotations[virtv1.VirtHandlerHeartbeat], n.Labels[virtv1.NodeSchedulable])
	})
}
