package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/internal/localcluster"
	"github.com/virtkit/virtkit/internal/testenv"
)

// virt-local with a real node beside its local one: the kubelet registers
// with the node's InternalIP and without the kubevirt.io/schedulable label
// (launchers stay off it until a handler serves it), runs a pod as a
// container from the cluster's registry, and Down leaves the host as it was.
func TestRealNodeBesideTheLocalOne(t *testing.T) {
	testenv.Integration(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	local, real := nodeName("local"), nodeName("kubelet")
	repo, err := testenv.RepoRoot()
	assert.NilError(t, err)
	c, err := localcluster.Start(ctx, localcluster.Options{Repo: repo, Nodes: []string{local}, KubeletNode: real, DataPrefix: "vkr-"})
	assert.NilError(t, err)
	stopped := false
	defer func() {
		if !stopped {
			assert.NilError(t, c.Stop(context.Background()))
		}
	}()

	var nodes corev1.NodeList
	assert.NilError(t, c.Client.List(ctx, &nodes))
	ready := map[string]bool{}
	for _, n := range nodes.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready[n.Name] = true
			}
		}
		if n.Name == real {
			assert.Equal(t, n.Labels[virtv1.NodeSchedulable], "", "the real node is not schedulable for launchers yet")
		}
	}
	assert.Assert(t, ready[local] && ready[real], "ready nodes: %v", ready)

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "realnode"}}
	assert.NilError(t, c.Client.Create(ctx, ns))
	testenv.Eventually(ctx, t, "the default service account", func() (bool, string) {
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: "realnode", Name: "default"}, &corev1.ServiceAccount{})
		return err == nil, fmt.Sprint(err)
	})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "realnode"}, Spec: corev1.PodSpec{
		NodeSelector: map[string]string{"kubernetes.io/hostname": real},
		Containers:   []corev1.Container{{Name: "c", Image: c.Registry() + "/virtkit/pause:devel"}},
	}}
	assert.NilError(t, c.Client.Create(ctx, pod))
	testenv.Eventually(ctx, t, "the pod Running in a container on the real node", func() (bool, string) {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err.Error()
		}
		running := pod.Status.Phase == corev1.PodRunning && len(pod.Status.ContainerStatuses) == 1 &&
			strings.HasPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
		return running && pod.Spec.NodeName == real, fmt.Sprintf("%s on %q: %+v", pod.Status.Phase, pod.Spec.NodeName, pod.Status.ContainerStatuses)
	})

	// Down fails unless the real node found the host as it recorded it
	// before starting.
	assert.NilError(t, c.Stop(ctx))
	stopped = true
}
