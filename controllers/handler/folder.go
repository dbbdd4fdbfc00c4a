package handler

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vmictl "github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/virt/launcher"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// A launcher's folder is its pod's emptyDir (contract.RunVolume), which the
// kubelet keeps in the node's pods folder (Config.PodsDir) under the pod's
// UID and removes with the pod. The handler names a launcher by its role,
// its folder key: the VMI's UID for the VMI's own launcher pod, a
// migration's UID for that migration's target pod. launcherPods turns a
// key into the pod, once per key.

// errNoLauncherPod says that no launcher pod of the folder key is on the
// node (yet, or any more).
var errNoLauncherPod = errors.New("no launcher pod on the node")

// launcherPods remembers the launcher pod of each folder key it found. A
// key has one pod for good (a launcher pod is never replaced; a new one is
// a new VMI or migration), so an entry holds until the VMI is forgotten.
type launcherPods struct {
	mu   sync.Mutex
	pods map[types.UID]launcherPodRef
}

type launcherPodRef struct {
	vmi types.NamespacedName
	pod types.UID
}

func (l *launcherPods) get(folder types.UID) (types.UID, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ref, ok := l.pods[folder]
	return ref.pod, ok
}

func (l *launcherPods) put(folder types.UID, ref launcherPodRef) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pods == nil {
		l.pods = map[types.UID]launcherPodRef{}
	}
	l.pods[folder] = ref
}

// forget drops the keys of the VMI key.
func (l *launcherPods) forget(key types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for folder, ref := range l.pods {
		if ref.vmi == key {
			delete(l.pods, folder)
		}
	}
}

// launcherPod returns the UID of vmi's launcher pod on node whose folder
// key is folder. It is the pod in vmi's namespace, bound to node, that vmi
// controls, labelled kubevirt.io/migrationJobUID=folder for a migration's
// target and not labelled so for the VMI's own. The pod's labels are the
// VMI controller's; the namespace is the VMI's, so only someone who may
// already edit the VMI can make a pod that matches.
func (r *Reconciler) launcherPod(ctx context.Context, vmi *virtv1.VirtualMachineInstance, folder types.UID, node string) (types.UID, error) {
	if uid, ok := r.pods.get(folder); ok {
		return uid, nil
	}
	var pods corev1.PodList
	if err := r.reader.List(ctx, &pods, client.InNamespace(vmi.Namespace), client.MatchingLabels{virtv1.CreatedByLabel: string(vmi.UID)}); err != nil {
		return "", fmt.Errorf("handler: VMI %s/%s: listing its launcher pods: %w", vmi.Namespace, vmi.Name, err)
	}
	var found []types.UID
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != node || !metav1.IsControlledBy(p, vmi) {
			continue
		}
		if vmictl.RoleOf(vmi, p) == folder {
			found = append(found, p.UID)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("handler: VMI %s/%s: launcher pod of %s on node %s: %w", vmi.Namespace, vmi.Name, folder, node, errNoLauncherPod)
	case 1:
		r.pods.put(folder, launcherPodRef{vmi: types.NamespacedName{Namespace: vmi.Namespace, Name: vmi.Name}, pod: found[0]})
		return found[0], nil
	default:
		return "", fmt.Errorf("handler: VMI %s/%s: %d launcher pods of %s on node %s, want one", vmi.Namespace, vmi.Name, len(found), folder, node)
	}
}

// hostLayout is the launcher folder of folder key folder of vmi on this
// node, as the node sees it: its pod's emptyDir in Config.PodsDir.
func (r *Reconciler) hostLayout(ctx context.Context, vmi *virtv1.VirtualMachineInstance, folder types.UID) (launcher.Layout, error) {
	pod, err := r.launcherPod(ctx, vmi, folder, r.cfg.NodeName)
	if err != nil {
		return launcher.Layout{}, err
	}
	return launcher.Layout{Root: contract.PodFolder(r.cfg.PodsDir, pod)}, nil
}
