package vmi

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// ProvisioningAnnotation marks a VMI's temporary provisioning pod, as
// KubeVirt marks its WaitForFirstConsumer pod.
const ProvisioningAnnotation = virtv1.EphemeralProvisioningObject

// IsProvisioningPod says whether pod is a VMI's temporary provisioning pod
// (ProvisioningAnnotation), not a launcher pod.
func IsProvisioningPod(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[ProvisioningAnnotation]
	return ok
}

// RenderProvisioningPod renders vmi's temporary provisioning pod, KubeVirt's
// WaitForFirstConsumer pod: the launcher pod RenderPod makes, with its
// volumes, resources and placement, so that the scheduler picks the node
// the VMI would run on and binds there the claims that wait for their
// first consumer. Its compute container runs the launcher binary with
// contract.FlagBindOnly, which exits 0 at once, and has no probes; it is
// annotated ProvisioningAnnotation.
func RenderProvisioningPod(vmi *virtv1.VirtualMachineInstance, opts PodOptions) (*corev1.Pod, error) {
	pod, err := RenderPod(vmi, opts)
	if err != nil {
		return nil, err
	}
	pod.Annotations[ProvisioningAnnotation] = "true"
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if c.Name != ComputeContainer {
			continue
		}
		c.Command, c.Args = []string{contract.Binary, "--" + contract.FlagBindOnly}, nil
		c.ReadinessProbe, c.LivenessProbe = nil, nil
	}
	return pod, nil
}

// Event messages about provisioning pods, KubeVirt's.
const (
	messageDeletedProvisioningPod   = "Deleted WaitForFirstConsumer temporary pod %s"
	messageFailedDeleteProvisioning = "Failed to delete WaitForFirstConsumer temporary pod %s"
)

// syncProvisioningPods keeps vmi's provisioning pods as KubeVirt's VMI
// controller does: with provision set (the VMI waits to be created a pod
// while a DataVolume waits for its first consumer), one exists, made when
// none does; otherwise every one is deleted. It returns the live one, nil
// when there is none.
func (r *Reconciler) syncProvisioningPods(ctx context.Context, vmi *virtv1.VirtualMachineInstance, provision bool) (*corev1.Pod, error) {
	sel := client.ListOption(client.MatchingLabels{virtv1.CreatedByLabel: string(vmi.UID)})
	if r.podIndex {
		sel = client.MatchingFields{podsByVMI: string(vmi.UID)}
	}
	pods, err := r.provisioningPods(ctx, r.client, vmi, sel)
	if err != nil {
		return nil, err
	}
	var live *corev1.Pod
	for _, p := range pods {
		if provision {
			if p.DeletionTimestamp == nil && live == nil {
				live = p
			}
			continue
		}
		if p.DeletionTimestamp != nil {
			continue
		}
		if err := r.client.Delete(ctx, p, client.Preconditions{UID: &p.UID}); client.IgnoreNotFound(err) != nil {
			r.recorder.Eventf(vmi, corev1.EventTypeWarning, ReasonFailedDelete, messageFailedDeleteProvisioning, p.Name)
			return nil, fmt.Errorf("deleting provisioning pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		r.recorder.Eventf(vmi, corev1.EventTypeNormal, ReasonSuccessfulDelete, messageDeletedProvisioningPod, p.Name)
	}
	if !provision || live != nil {
		return live, nil
	}
	// The cache may not have seen the pod made a moment ago: the
	// apiserver says whether one is there before another is made.
	if pods, err = r.provisioningPods(ctx, r.reader, vmi, client.MatchingLabels{virtv1.CreatedByLabel: string(vmi.UID)}); err != nil {
		return nil, err
	}
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			return p, nil
		}
	}
	pod, err := r.createPod(ctx, vmi, RenderProvisioningPod)
	if err != nil {
		r.recorder.Eventf(vmi, corev1.EventTypeWarning, ReasonFailedCreate, "Error creating pod: %v", err)
		return nil, err
	}
	r.recorder.Eventf(vmi, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created virtual machine pod %s", pod.Name)
	return pod, nil
}

// mayHaveProvisioningPods says whether vmi may have provisioning pods to
// delete: before its launcher pod (they are deleted before it is made)
// and once it ended or is deleted. A running VMI's reconciles skip the
// lookup.
func mayHaveProvisioningPods(vmi *virtv1.VirtualMachineInstance) bool {
	switch vmi.Status.Phase {
	case "", virtv1.Pending:
		return true
	}
	return vmi.IsFinal() || vmi.DeletionTimestamp != nil
}

// provisioningPods lists, through rd with sel, vmi's provisioning pods.
func (r *Reconciler) provisioningPods(ctx context.Context, rd client.Reader, vmi *virtv1.VirtualMachineInstance, sel client.ListOption) ([]*corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := rd.List(ctx, pods, client.InNamespace(vmi.Namespace), sel); err != nil {
		return nil, fmt.Errorf("listing provisioning pods of VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	var out []*corev1.Pod
	for i := range pods.Items {
		if p := &pods.Items[i]; IsProvisioningPod(p) && controllerUID(p) == vmi.UID {
			out = append(out, p)
		}
	}
	return out, nil
}

// SyncProvisioning writes on a Pending VMI's status what its provisioning
// says, as KubeVirt's VMI controller does: while waiting (a DataVolume
// waits for its first consumer), the Provisioning condition is True, the
// provisioning pod's PodScheduled condition is mirrored while it cannot be
// scheduled, and the VMI fails when that pod failed. A VMI past Pending
// loses the Provisioning condition.
func SyncProvisioning(st *virtv1.VirtualMachineInstanceStatus, waiting bool, temp *corev1.Pod, ts metav1.Time) {
	switch st.Phase {
	case virtv1.Pending:
	case virtv1.Failed, virtv1.Succeeded:
		return
	default:
		conditions.VMI().Remove(&st.Conditions, virtv1.VirtualMachineInstanceProvisioning)
		return
	}
	if !waiting {
		return
	}
	conditions.VMI().Set(&st.Conditions, virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceProvisioning,
		Status: corev1.ConditionTrue}, ts)
	if temp == nil {
		return
	}
	syncPodScheduled(st, temp, ts)
	if temp.Status.Phase == corev1.PodFailed {
		reason, msg := podEndReason(temp)
		Fail(st, reason, "the WaitForFirstConsumer temporary pod failed: "+msg, ts)
	}
}
