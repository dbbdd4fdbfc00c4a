package vmi

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/network"
)

// ReasonPodNetworks is the reason of the VMI's event when its launcher
// pod's secondary networks are asked for again.
const ReasonPodNetworks = "PodNetworksChanged"

// syncPodNetworks asks the cluster's Multus for the secondary networks of
// a running VMI as its spec has them now (interface hotplug and unplug),
// as KubeVirt's VMI controller does: the launcher pod's
// k8s.v1.cni.cncf.io/networks annotation becomes network.MultusNetworks of
// the VMI, and Multus (on virt-local, the node) attaches and detaches the
// pod's interfaces. Not while a migration runs: its target pod was made
// with the spec's networks, and the spec waits for its end.
func (r *Reconciler) syncPodNetworks(ctx context.Context, vmi *virtv1.VirtualMachineInstance, pod *corev1.Pod) error {
	if pod == nil || pod.DeletionTimestamp != nil || vmi.DeletionTimestamp != nil || vmi.Status.Phase != virtv1.Running {
		return nil
	}
	if MigrationUnderway(vmi) {
		return nil
	}
	want := network.MultusNetworks(vmi)
	if pod.Annotations[network.MultusNetworksAnnotation] == want {
		return nil
	}
	upd := pod.DeepCopy()
	if want == "" {
		delete(upd.Annotations, network.MultusNetworksAnnotation)
	} else {
		if upd.Annotations == nil {
			upd.Annotations = map[string]string{}
		}
		upd.Annotations[network.MultusNetworksAnnotation] = want
	}
	if err := r.client.Patch(ctx, upd, client.MergeFromWithOptions(pod, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("asking for the secondary networks of launcher pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	r.recorder.Eventf(vmi, corev1.EventTypeNormal, ReasonPodNetworks, "Asked for the secondary networks of pod %s as the spec's: %s", pod.Name, want)
	return nil
}
