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
	"github.com/virtkit/virtkit/virt/storage/dvspec"
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
// hotpluggable volumes with a disk each get one, on launcher's node
// (HotplugDisks). A pod goes once the handler no longer holds its image:
// its volume left the spec and no hotplug status names the volume, or it
// belongs to a former launcher pod (the source of a migration that
// completed, or the target of one that failed) and the status names
// another pod; all go when the VMI is final or has no launcher pod. The
// pods of a running migration's target pod are controllers/migration's.
func PlanAttachPods(vmi *virtv1.VirtualMachineInstance, launcher *corev1.Pod, have []*corev1.Pod) AttachPlan {
	var plan AttachPlan
	want := map[string]bool{}
	if vmi.DeletionTimestamp == nil && !vmi.IsFinal() && launcher != nil && launcher.Spec.NodeName != "" && launcher.DeletionTimestamp == nil && vmi.IsRunning() {
		for _, name := range HotplugDisks(vmi) {
			want[name] = true
		}
	}
	// The pod each reported volume's status names ("" for none yet).
	named := map[string]string{}
	for _, s := range vmi.Status.VolumeStatus {
		if s.HotplugVolume != nil {
			named[s.Name] = s.HotplugVolume.AttachPodName
		}
	}
	incoming := ""
	if MigrationUnderway(vmi) {
		incoming = vmi.Status.MigrationState.TargetPod
	}
	held := map[string]bool{}
	for _, p := range have {
		vol := AttachedVolume(p)
		name, reported := named[vol]
		ours := launcher != nil && metav1.IsControlledBy(p, launcher)
		switch {
		case p.DeletionTimestamp != nil:
		case vmi.IsFinal() || launcher == nil:
			plan.Delete = append(plan.Delete, p)
		case incoming != "" && controlledByPod(p, incoming):
			// A running migration's target holds it.
		case want[vol] && ours:
			held[vol] = true
		case reported && (name == p.Name || (name == "" && ours)):
			// The handler still holds its image.
		default:
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

// controlledByPod reports whether p's controller is the pod named name.
func controlledByPod(p *corev1.Pod, name string) bool {
	ref := metav1.GetControllerOf(p)
	return ref != nil && ref.Kind == "Pod" && ref.Name == name
}

// HotplugDisks are the volumes of vmi that an attachment pod brings to its
// launcher pod: the hotpluggable ones the spec gives a disk, in the spec's
// order.
func HotplugDisks(vmi *virtv1.VirtualMachineInstance) []string {
	disks := map[string]bool{}
	for _, d := range vmi.Spec.Domain.Devices.Disks {
		disks[d.Name] = true
	}
	var out []string
	for i := range vmi.Spec.Volumes {
		if v := &vmi.Spec.Volumes[i]; disks[v.Name] && spec.Hotpluggable(v) {
			out = append(out, v.Name)
		}
	}
	return out
}

// AttachedHotplug are the volumes of HotplugDisks the guest has attached
// (their hotplug status names a target device): what a migration's target
// pod must hold before the guest comes, as the guest's disks name them.
func AttachedHotplug(vmi *virtv1.VirtualMachineInstance) []string {
	attached := map[string]bool{}
	for _, s := range vmi.Status.VolumeStatus {
		if s.HotplugVolume != nil && s.Target != "" {
			attached[s.Name] = true
		}
	}
	var out []string
	for _, name := range HotplugDisks(vmi) {
		if attached[name] {
			out = append(out, name)
		}
	}
	return out
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
		pod, err := CreateAttachPod(ctx, r.client, vmi, launcher, name, opts)
		if err != nil {
			return err
		}
		if pod != nil {
			r.recorder.Eventf(vmi, corev1.EventTypeNormal, ReasonAttachPodCreated, "Created attachment pod %s, for volume %s", pod.Name, name)
		}
	}
	return nil
}

// CreateAttachPod creates the attachment pod of vmi's volume name next to
// launcher (AttachPodFor, with the claim's volume mode). It returns the pod
// it created, or nil when it made none: the claim does not exist yet, or
// the pod does (made already, or the last one still going; its events
// come back to the caller's watch). A pod that cannot be rendered is a
// terminal error.
func CreateAttachPod(ctx context.Context, c client.Client, vmi *virtv1.VirtualMachineInstance, launcher *corev1.Pod, name string, opts PodOptions) (*corev1.Pod, error) {
	vol := volumeNamed(vmi, name)
	if vol == nil {
		return nil, reconcile.TerminalError(fmt.Errorf("attachment pod of VirtualMachineInstance %s/%s: no volume %s", vmi.Namespace, vmi.Name, name))
	}
	claim := &corev1.PersistentVolumeClaim{}
	key := types.NamespacedName{Namespace: vmi.Namespace, Name: migrate.ClaimOf(vol)}
	if err := c.Get(ctx, key, claim); apierrors.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading claim %s: %w", key, err)
	}
	block := dvspec.IsBlock(claim)
	pod, err := AttachPodFor(vmi, launcher, vol, block, opts)
	if err != nil {
		return nil, reconcile.TerminalError(err)
	}
	if err := c.Create(ctx, pod); apierrors.IsAlreadyExists(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("creating attachment pod of volume %s: %w", name, err)
	}
	return pod, nil
}

// volumeNamed is vmi's volume name, nil when there is none.
func volumeNamed(vmi *virtv1.VirtualMachineInstance, name string) *virtv1.Volume {
	for i := range vmi.Spec.Volumes {
		if vmi.Spec.Volumes[i].Name == name {
			return &vmi.Spec.Volumes[i]
		}
	}
	return nil
}
