package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/local/cluster"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// launcherFolder is the node folder of a launcher pod of v, as its node's
// handler finds it: the pod's emptyDir in the node's pods folder. It is
// v's own pod with migration "", else that migration's target pod; it
// waits for the pod to be bound to a node.
func (w *world) launcherFolder(ctx context.Context, t *testing.T, v *virtv1.VirtualMachineInstance, migration types.UID) string {
	t.Helper()
	var folder string
	eventually(ctx, t, "the launcher pod of "+v.Name+" bound to a node", func() (bool, string) {
		f, err := w.launcherFolderNow(ctx, v, migration)
		folder = f
		return f != "", fmt.Sprint(err)
	})
	return folder
}

// launcherFolderNow is launcherFolder without the wait: "" while the pod
// is not bound.
func (w *world) launcherFolderNow(ctx context.Context, v *virtv1.VirtualMachineInstance, migration types.UID) (string, error) {
	return w.cfg.LauncherFolder(ctx, w.c, v, migration)
}

// serialLog is the guest's serial console log in the folder of v's own
// launcher pod.
func (w *world) serialLog(ctx context.Context, t *testing.T, v *virtv1.VirtualMachineInstance) string {
	t.Helper()
	return filepath.Join(w.launcherFolder(ctx, t, v, ""), contract.SerialLog)
}

// podFoldersLeft lists the pod folders on the cluster's nodes (each holds
// a pod's emptyDirs, the launcher's folder among them) of pods the API no
// longer has: what a node left behind.
func (w *world) podFoldersLeft(ctx context.Context, t *testing.T) []string {
	t.Helper()
	var pods corev1.PodList
	must(t, w.c.List(ctx, &pods))
	live := map[string]bool{}
	for _, p := range pods.Items {
		live[string(p.UID)] = true
	}
	var nodes corev1.NodeList
	must(t, w.c.List(ctx, &nodes))
	var left []string
	for _, n := range nodes.Items {
		dirs, err := filepath.Glob(filepath.Join(w.cfg.PodsDir(n.Name), "*"))
		must(t, err)
		for _, d := range dirs {
			if !live[filepath.Base(d)] {
				left = append(left, d)
			}
		}
	}
	return left
}

// claimBytes is what disk.img of the bound claim ns/name holds.
func (w *world) claimBytes(ctx context.Context, t *testing.T, ns, name string) []byte {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	must(t, w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc))
	b, err := os.ReadFile(w.claimDisk(ctx, t, pvc))
	must(t, err)
	return b
}

// claimDisk is the host path of disk.img in a bound claim's volume.
func (w *world) claimDisk(ctx context.Context, t *testing.T, pvc *corev1.PersistentVolumeClaim) string {
	t.Helper()
	dir, err := cluster.ClaimFolder(ctx, w.c, w.data, pvc)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "disk.img")
}
