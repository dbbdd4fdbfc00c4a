package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// TestReplicaSetScales proves a VirtualMachineInstanceReplicaSet on
// virt-local: scaled to 3 through the scale subresource (the request
// `kubectl scale vmirs/tiny --replicas=3` sends), three guests boot, each
// with its own name as its hostname; scaled to 1, two go with their pods;
// a VMI killed is replaced; deleting the replica set takes the rest.
func TestReplicaSetScales(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ns := "replicas"
	must(t, w.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	rs := w.readReplicaSet(t, "../../examples/manifests/vmirs-tiny.yaml", ns)
	must(t, w.c.Create(ctx, rs))

	w.scaleReplicaSet(ctx, t, rs, 3)
	running := w.waitReplicas(ctx, t, rs, 3)
	for i := range running {
		waitFile(ctx, t, w.serialLog(ctx, t, &running[i]), "VIRTKIT-HOSTNAME "+running[i].Name)
	}
	eventually(ctx, t, "three ready replicas", func() (bool, string) {
		got := &virtv1.VirtualMachineInstanceReplicaSet{}
		must(t, w.c.Get(ctx, client.ObjectKeyFromObject(rs), got))
		return got.Status.Replicas == 3 && got.Status.ReadyReplicas == 3, fmt.Sprintf("status %+v", got.Status)
	})
	sc := &autoscalingv1.Scale{}
	must(t, w.c.SubResource("scale").Get(ctx, rs, sc))
	if sc.Status.Replicas != 3 || sc.Status.Selector != "app=tiny" {
		t.Errorf("scale status %+v, want 3 replicas and selector app=tiny", sc.Status)
	}

	w.scaleReplicaSet(ctx, t, rs, 1)
	left := w.waitReplicas(ctx, t, rs, 1)
	w.waitLaunchers(ctx, t, ns, left)

	// Killed, it is replaced by a new guest.
	must(t, w.c.Delete(ctx, &left[0]))
	again := w.waitReplicas(ctx, t, rs, 1)
	if again[0].UID == left[0].UID {
		t.Fatalf("no replacement for the killed VMI %s", left[0].Name)
	}
	w.consoleShows(ctx, t, &again[0], "VIRTKIT-HEARTBEAT")

	// Deleted, it takes its VMIs and their pods with it.
	must(t, w.c.Delete(ctx, rs))
	w.waitLaunchers(ctx, t, ns, nil)
}

// readReplicaSet reads a replica set manifest into ns; its containerDisks of
// localhost:5000 name the running test's registry.
func (w *world) readReplicaSet(t *testing.T, path, ns string) *virtv1.VirtualMachineInstanceReplicaSet {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	rs := &virtv1.VirtualMachineInstanceReplicaSet{}
	must(t, yaml.UnmarshalStrict(b, rs))
	rs.Namespace = ns
	for _, v := range rs.Spec.Template.Spec.Volumes {
		if cd := v.ContainerDisk; cd != nil && strings.HasPrefix(cd.Image, manifestRegistry) {
			cd.Image = w.localImage(strings.TrimPrefix(cd.Image, manifestRegistry))
		}
	}
	return rs
}

// scaleReplicaSet patches the scale subresource as kubectl scale does.
func (w *world) scaleReplicaSet(ctx context.Context, t *testing.T, rs *virtv1.VirtualMachineInstanceReplicaSet, n int) {
	t.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)))
	// The answer is a Scale, decoded into the object given: not rs.
	must(t, w.c.SubResource("scale").Patch(ctx, rs.DeepCopy(), patch))
}

// waitReplicas waits until exactly n VMIs of rs exist, all Running and
// none being deleted, and returns them.
func (w *world) waitReplicas(ctx context.Context, t *testing.T, rs *virtv1.VirtualMachineInstanceReplicaSet, n int) []virtv1.VirtualMachineInstance {
	t.Helper()
	var got []virtv1.VirtualMachineInstance
	eventually(ctx, t, fmt.Sprintf("%d VMIs of %s Running", n, rs.Name), func() (bool, string) {
		list := &virtv1.VirtualMachineInstanceList{}
		must(t, w.c.List(ctx, list, client.InNamespace(rs.Namespace), client.MatchingLabels(rs.Spec.Selector.MatchLabels)))
		got = list.Items
		var state []string
		ok := len(got) == n
		for _, v := range got {
			state = append(state, fmt.Sprintf("%s:%s:deleting=%v", v.Name, v.Status.Phase, v.DeletionTimestamp != nil))
			ok = ok && v.Status.Phase == virtv1.Running && v.DeletionTimestamp == nil
		}
		return ok, strings.Join(state, " ")
	})
	return got
}

// waitLaunchers waits until the pods of ns are the launchers of vmis, and
// no others.
func (w *world) waitLaunchers(ctx context.Context, t *testing.T, ns string, vmis []virtv1.VirtualMachineInstance) {
	t.Helper()
	var want []string
	for _, v := range vmis {
		want = append(want, string(v.UID))
	}
	slices.Sort(want)
	eventually(ctx, t, fmt.Sprintf("the launchers of %d VMIs alone in %s", len(vmis), ns), func() (bool, string) {
		pods := &corev1.PodList{}
		must(t, w.c.List(ctx, pods, client.InNamespace(ns)))
		var got []string
		for _, p := range pods.Items {
			got = append(got, p.Labels[virtv1.CreatedByLabel])
		}
		slices.Sort(got)
		return slices.Equal(got, want), fmt.Sprintf("pods of VMIs %v", got)
	})
}
