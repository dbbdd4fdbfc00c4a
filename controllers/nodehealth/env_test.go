package nodehealth_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/controllers/nodehealth"
	"github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	testenv.Main(m)
}

// On a real apiserver, with a clock the test moves: a node whose handler
// stopped beating is made unschedulable, and its VMIs whose launchers
// ended go Failed; once the node has also been not Ready past the grace
// period, every VMI on it goes Failed and its launcher pod is removed. A
// healthy node's VMIs are not touched, and a deleted node counts as down.
func TestUnresponsiveNodeOnAPIServer(t *testing.T) {
	ctx := context.Background()
	c := kubeenv.ControlPlane(t).Client
	clock := clocktesting.NewFakePassiveClock(now)
	rec := record.NewFakeRecorder(50)
	r := nodehealth.New(nodehealth.WithClient(c), nodehealth.WithClock(clock), nodehealth.WithEventRecorder(rec))
	reconcile := func(node string) ctrl.Result {
		t.Helper()
		res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: node}})
		assert.NilError(t, err)
		return res
	}
	assert.NilError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vms"}}))
	mkNode := func(name string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{virtv1.NodeSchedulable: "true"},
			Annotations: map[string]string{virtv1.VirtHandlerHeartbeat: clock.Now().Format(time.RFC3339)}}}
		assert.NilError(t, c.Create(ctx, n))
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(clock.Now())}}
		assert.NilError(t, c.Status().Update(ctx, n))
		return n
	}
	a, b := mkNode("node-a"), mkNode("node-b")
	alive := vmiOn(t, c, "alive", b.Name, corev1.PodRunning)
	ended := vmiOn(t, c, "ended", b.Name, corev1.PodFailed)
	orphan := vmiOn(t, c, "orphan", b.Name, "")
	healthy := vmiOn(t, c, "healthy", a.Name, "")

	// Beating: nothing, and a look again when the beat would be stale.
	assert.Equal(t, reconcile(b.Name), ctrl.Result{RequeueAfter: nodehealth.DefaultHeartbeatTimeout + time.Second})
	assert.Equal(t, phase(t, c, orphan), virtv1.Running)

	// node-b's handler stops; node-a's goes on beating.
	clock.SetTime(clock.Now().Add(6 * time.Minute))
	a.Annotations[virtv1.VirtHandlerHeartbeat] = clock.Now().Format(time.RFC3339)
	assert.NilError(t, c.Update(ctx, a))
	assert.Equal(t, reconcile(b.Name), ctrl.Result{RequeueAfter: nodehealth.DefaultRecheck})
	reconcile(a.Name)
	assert.NilError(t, c.Get(ctx, client.ObjectKeyFromObject(b), b))
	assert.Equal(t, b.Labels[virtv1.NodeSchedulable], "false")
	assert.Equal(t, phase(t, c, alive), virtv1.Running, "a VMI whose launcher runs is kept while the kubelet is Ready")
	for _, v := range []*virtv1.VirtualMachineInstance{ended, orphan} {
		got := get(t, c, v)
		assert.Equal(t, got.Status.Phase, virtv1.Failed, v.Name)
		assert.Equal(t, string(got.Status.Reason), nodehealth.ReasonNodeUnresponsive)
		ready := conditions.VMI().Find(got.Status.Conditions, virtv1.VirtualMachineInstanceReady)
		assert.Assert(t, ready != nil && ready.Status == corev1.ConditionFalse && ready.Reason == nodehealth.ReasonNodeUnresponsive, "%+v", ready)
		assert.Equal(t, ready.Message, "virt-handler on node node-b is not responsive, marking VMI as failed")
	}
	assert.Equal(t, phase(t, c, healthy), virtv1.Running)
	assert.Equal(t, <-rec.Events, "Normal NodeUnresponsive virt-handler is not responsive, marking node as unresponsive")

	// node-b's kubelet stops too: not Ready past the grace period.
	b.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, LastTransitionTime: metav1.NewTime(clock.Now())}}
	assert.NilError(t, c.Status().Update(ctx, b))
	reconcile(b.Name)
	assert.Equal(t, phase(t, c, alive), virtv1.Running, "within the grace period")
	clock.SetTime(clock.Now().Add(nodehealth.DefaultNotReadyGrace + time.Second))
	reconcile(b.Name)
	assert.Equal(t, phase(t, c, alive), virtv1.Failed)
	var pods corev1.PodList
	assert.NilError(t, c.List(ctx, &pods, client.InNamespace("vms"), client.MatchingLabels{virtv1.CreatedByLabel: string(alive.UID)}))
	assert.Equal(t, len(pods.Items), 0, "the launcher pod of a down node is removed at once")

	// A node deleted is down: its VMIs go Failed, their pods go.
	gone := vmiOn(t, c, "gone", "node-c", corev1.PodRunning)
	reconcile("node-c")
	assert.Equal(t, phase(t, c, gone), virtv1.Failed)
	assert.NilError(t, c.List(ctx, &pods, client.InNamespace("vms"), client.MatchingLabels{virtv1.CreatedByLabel: string(gone.UID)}))
	assert.Equal(t, len(pods.Items), 0)
	assert.Equal(t, phase(t, c, healthy), virtv1.Running)
}

// vmiOn creates a Running VMI on node, with a launcher pod in podPhase
// there ("": none), as virt-controller and the handler would leave it.
func vmiOn(t *testing.T, c client.Client, name, node string, podPhase corev1.PodPhase) *virtv1.VirtualMachineInstance {
	t.Helper()
	ctx := context.Background()
	v := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "vms", Name: name}}
	assert.NilError(t, c.Create(ctx, v))
	v.Status = virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Running, NodeName: node}
	assert.NilError(t, c.Status().Update(ctx, v))
	if podPhase == "" {
		return v
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: v.Namespace, Name: "virt-launcher-" + name,
		Labels: map[string]string{virtv1.AppLabel: vmi.LauncherLabelValue, virtv1.CreatedByLabel: string(v.UID)}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "compute", Image: "launcher"}}}}
	assert.NilError(t, c.Create(ctx, p))
	p.Status.Phase = podPhase
	assert.NilError(t, c.Status().Update(ctx, p))
	return v
}

func get(t *testing.T, c client.Client, v *virtv1.VirtualMachineInstance) *virtv1.VirtualMachineInstance {
	t.Helper()
	got := &virtv1.VirtualMachineInstance{}
	err := c.Get(context.Background(), client.ObjectKeyFromObject(v), got)
	assert.Assert(t, !apierrors.IsNotFound(err), "VMI %s gone", v.Name)
	assert.NilError(t, err)
	return got
}

func phase(t *testing.T, c client.Client, v *virtv1.VirtualMachineInstance) virtv1.VirtualMachineInstancePhase {
	t.Helper()
	return get(t, c, v).Status.Phase
}
