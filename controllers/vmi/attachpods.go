package vmi

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virt/migrate"
	"github.com/virtkit/virtkit/virt/spec"
)

// Event reasons of attachment pods.
const (
	ReasonAttachPodCreated = "SuccessfulCreate"
	ReasonAttachPodDeleted = "SuccessfulDelete"
)

// AttachPlan is what syncAttachPods does for one VMI: plain data.
type AttachPlan struct {
	// Create are the volumes that need an attachment pod.
	Create []string
	// Delete are attachment pods whose volume left the spec and that the
	// handler let go of (no hotplug status names the volume any more), and
	// all of them once the VMI is final or has no launcher pod.
	Delete []*corev1.Pod
}

// PlanAttachPods decides the attachment pods of vmi whose launcher pod is
// launcher, given the attachment pods that exist (have). A running VMI's
// hotpluggable volumes with a disk each get one, on launcher's node; a pod
// goes once its volume left the spec and the handler no longer reports the
// volume (it has detached and unbound it), or when the VMI is final.
func PlanAttachPods(vmi *virtv1.VirtualMachineInstance, launcher *corev1.Pod, have []*corev1.Pod) AttachPlan {
	var plan AttachPlan
	ending := vmi.DeletionTimestamp != nil || vmi.IsFinal()
	want := map[string]bool{}
	if !ending && launcher != nil && launcher.Spec.NodeName != "" && launcher.DeletionTimestamp == nil && vmi.IsRunning() {
		disks := map[string]bool{}
		for _, d := range vmi.Spec.Domain.Devices.Disks {
			disks[d.Name] = true
		}
		for i := range vmi.Spec.Volumes {
			if v := &vmi.Spec.Volumes[i]; disks[v.Name] && spec.Hotpluggable(v) {
				want[v.Name] = true
			}
		}
	}
	reported := map[string]bool{}
	for _, s := range vmi.Status.VolumeStatus {
		if s.HotplugVolume != nil {
			reported[s.Name] = true
		}
	}
	held := map[string]bool{}
	for _, p := range have {
		vol := AttachedVolume(p)
		switch {
		case p.DeletionTimestamp != nil:
		case vmi.IsFinal() || launcher == nil:
			plan.Delete = append(plan.Delete, p)
		case want[vol] && metav1.IsControlledBy(p, launcher):
			held[vol] = true
		case !reported[vol]:
			// Unwanted, or a former launcher's: once the handler let go.
			plan.Delete = append(plan.Delete, p)
		}
	}
	for _, v := range vmi.Spec.Volumes {
		if want[v.Name] && !held[v.Name] {
			plan.Create = append(plan.Create, v.Name)
		}
	}
	return plan
}

// attachPods lists vmi's attachment pods (by the index, or by label and
// annotation without one).
func (r *Reconciler) attachPods(ctx context.Context, vmi *virtv1.VirtualMachineInstance) ([]*corev1.Pod, error) {
	sel := client.ListOption(client.MatchingLabels{virtv1.AppLabel: contract.HotplugLabelValue})
	if r.podIndex {
		sel = client.MatchingFields{podsByVMI: string(vmi.UID)}
	}
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(vmi.Namespace), sel); err != nil {
		return nil, fmt.Errorf("listing attachment pods of VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	var out []*corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if AttachedVolume(p) != "" && p.Annotations[contract.OwnerVMIUIDAnnotation] == string(vmi.UID) {
			out = append(out, p)
		}
	}
	return out, nil
}

// syncAttachPods creates and deletes vmi's attachment pods as
// PlanAttachPods says. A claim that does not exist yet gets no pod (the
// handler reports the volume Pending); its creation does not wake the VMI,
// the handler's status write does.
func (r *Reconciler) syncAttachPods(ctx context.Context, vmi *virtv1.VirtualMachineInstance, launcher *corev1.Pod) error {
	have, err := r.attachPods(ctx, vmi)
	if err != nil {
		return err
	}
	plan := PlanAttachPods(vmi, launcher, have)
	for _, p := range plan.Delete {
		if err := r.client.Delete(ctx, p, client.Preconditions{UID: &p.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting attachment pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		r.recorder.Eventf(vmi, corev1.EventTypeNormal, ReasonAttachPodDeleted, "Deleted attachment pod %s, for volume %s", p.Name, AttachedVolume(p))
	}
	if len(plan.Create) == 0 {
		return nil
	}
	opts, err := r.podOptions(ctx)
	if err != nil {
		return err
	}
	for _, name := range plan.Create {
		vol := volumeNamed(vmi, name)
		claim := &corev1.PersistentVolumeClaim{}
		key := types.NamespacedName{Namespace: vmi.Namespace, Name: migrate.ClaimOf(vol)}
		if err := r.client.Get(ctx, key, claim); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return fmt.Errorf("reading claim %s: %w", key, err)
		}
		block := claim.Spec.VolumeMode != nil && *claim.Spec.VolumeMode == corev1.PersistentVolumeBlock
		pod, err := AttachPodFor(vmi, launcher, vol, block, opts)
		if err != nil {
			return reconcile.TerminalError(err)
		}
		if err := r.client.Create(ctx, pod); apierrors.IsAlreadyExists(err) {
			continue // made already, or the last one still going: its events come back here
		} else if err != nil {
			return fmt.Errorf("creating attachment pod of volume %s: %w", name, err)
		}
		r.recorder.Eventf(vmi, corev1.EventTypeNormal, ReasonAttachPodCreated, "Created attachment pod %s, for volume %s", pod.Name, name)
	}
	return nil
}

// volumeNamed is vmi's volume name; the caller knows it exists.
func volumeNamed(vmi *virtv1.VirtualMachineInstance, name string) *virtv1.Volume {
	for i := range vmi.Spec.Volumes {
		if vmi.Spec.Volumes[i].Name == name {
			return &vmi.Spec.Volumes[i]
		}
	}
	return nil
}
