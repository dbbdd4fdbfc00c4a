package vmi

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/virt/storage/backendstorage"
)

// Finalizer keeps a VMI until its launcher pod is gone; KubeVirt's name.
const Finalizer = virtv1.VirtualMachineInstanceFinalizer

// PodScheduled is the VMI condition that mirrors the pod's PodScheduled
// condition while the pod cannot be scheduled, as KubeVirt names it.
const PodScheduled = virtv1.VirtualMachineInstanceConditionType(corev1.PodScheduled)

// Reasons in status.reason and on the Ready or Synchronized condition.
const (
	// ReasonFailedCreate: the launcher pod could not be created
	// (Synchronized=False, and an event); ReasonSuccessfulCreate,
	// ReasonSuccessfulDelete and ReasonFailedDelete are event reasons.
	ReasonFailedCreate     = "FailedCreate"
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedDelete     = "FailedDelete"
	// ReasonPodNotExists: the launcher pod disappeared before the VMI ended.
	ReasonPodNotExists = virtv1.PodNotExistsReason
	// ReasonPodFailed: the launcher pod failed, without a launcher exit code
	// that says more (evicted, image pull, killed...).
	ReasonPodFailed = "PodFailed"
	// ReasonPodCompleted: the launcher exited cleanly before the handler took over.
	ReasonPodCompleted = "PodCompleted"
	// ReasonGuestCrashed, ReasonGuestDestroyed, ReasonLibvirtdDied and
	// ReasonLauncherSetupFailed name the launcher's exit codes.
	ReasonGuestCrashed        = "GuestCrashed"
	ReasonGuestDestroyed      = "GuestDestroyed"
	ReasonLibvirtdDied        = "LibvirtdDied"
	ReasonLauncherSetupFailed = "LauncherSetupFailed"
	// ReasonErrImagePull and ReasonImagePullBackOff are the kubelet's
	// reasons for a container waiting for its image, copied to the VMI.
	ReasonErrImagePull     = "ErrImagePull"
	ReasonImagePullBackOff = "ImagePullBackOff"
)

// Plan is what one reconcile does about a VMI's launcher pod and metadata.
type Plan struct {
	// AddFinalizer and RemoveFinalizer change the VMI's Finalizer.
	AddFinalizer, RemoveFinalizer bool
	// CreatePod: render and create the launcher pod.
	CreatePod bool
	// DeletePod: delete the launcher pod gracefully.
	DeletePod bool
}

// PlanFor decides what to do given the VMI and its launcher pod (nil when
// there is none, checked against the apiserver).
func PlanFor(vmi *virtv1.VirtualMachineInstance, pod *corev1.Pod) Plan {
	var p Plan
	podLive := pod != nil && pod.DeletionTimestamp == nil
	if vmi.DeletionTimestamp != nil {
		p.DeletePod = podLive
		p.RemoveFinalizer = pod == nil && controllerutil.ContainsFinalizer(vmi, Finalizer)
		return p
	}
	if vmi.IsFinal() {
		p.DeletePod = podLive
		return p
	}
	p.AddFinalizer = !controllerutil.ContainsFinalizer(vmi, Finalizer)
	switch vmi.Status.Phase {
	case "", virtv1.Pending:
		p.CreatePod = pod == nil
	}
	return p
}

// NextStatus returns the status vmi should have given its launcher pod (nil
// when there is none), the error of creating that pod in this reconcile (nil
// when none) and the time now. It does not change vmi. It changes only the
// fields this controller owns; a VMI being deleted, a final VMI and a VMI the
// handler runs keep their phase (except Failed when the pod is gone).
func NextStatus(vmi *virtv1.VirtualMachineInstance, pod *corev1.Pod, createErr error, now time.Time) virtv1.VirtualMachineInstanceStatus {
	st := vmi.Status.DeepCopy()
	ts := metav1.NewTime(now.Truncate(time.Second))
	if vmi.DeletionTimestamp != nil || vmi.IsFinal() {
		return *st
	}
	setPhase := func(p virtv1.VirtualMachineInstancePhase) { SetPhase(st, p, ts) }
	fail := func(reason, message string) { Fail(st, reason, message, ts) }

	if pod == nil {
		switch st.Phase {
		case "", virtv1.Pending:
			setPhase(virtv1.Pending)
			if createErr != nil {
				conditions.VMI().Set(&st.Conditions, virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceSynchronized,
					Status: corev1.ConditionFalse, Reason: ReasonFailedCreate, Message: createErr.Error(), LastTransitionTime: ts}, ts)
			}
		default: // Scheduling, Scheduled, Running, Unknown: the pod was there
			fail(ReasonPodNotExists, "the launcher pod was deleted before the VirtualMachineInstance ended")
		}
		return *st
	}

	if c := conditions.VMI().Find(st.Conditions, virtv1.VirtualMachineInstanceSynchronized); c != nil && c.Reason == ReasonFailedCreate {
		conditions.VMI().Remove(&st.Conditions, virtv1.VirtualMachineInstanceSynchronized) // the handler's reasons stay
	}
	if st.ActivePods == nil {
		st.ActivePods = map[types.UID]string{}
	}
	st.ActivePods[pod.UID] = pod.Spec.NodeName
	if claim := StateClaimOf(pod); claim != "" {
		// As KubeVirt's: the claim the VMI's state is kept in.
		backendstorage.SetVolumeStatus(st, claim)
	}
	if st.Phase == "" || st.Phase == virtv1.Pending {
		setPhase(virtv1.Pending) // records Pending's timestamp once
		setPhase(virtv1.Scheduling)
	}
	syncPodScheduled(st, pod, ts)

	if st.Phase == virtv1.Scheduling || st.Phase == virtv1.Scheduled {
		// The handler has not taken the VMI over: a pod that ended is the VMI's end.
		if PodEnded(pod) {
			reason, msg := podEndReason(pod)
			fail(reason, msg)
			return *st
		}
		if pod.DeletionTimestamp != nil {
			// Deleted by someone else: Failed as soon as it is gone.
			return *st
		}
	}
	if st.Phase == virtv1.Scheduling && pod.Spec.NodeName != "" {
		setPhase(virtv1.Scheduled)
		st.NodeName = pod.Spec.NodeName
	}
	if st.Phase == virtv1.Scheduling || st.Phase == virtv1.Scheduled {
		syncImagePull(st, pod, ts)
	}
	syncLauncherImage(st, pod)
	syncProbedReady(st, vmi, pod, ts)
	if IsCurrentPod(vmi, pod) {
		syncHotplugConditions(st, vmi, pod, ts)
	}
	return *st
}

// syncProbedReady mirrors, as KubeVirt does, the launcher pod's Ready
// condition on a running VMI that has a readiness probe: the probe runs on
// the pod's compute container (computeProbes), so the pod's readiness is
// the guest's. A paused VMI stays as the handler says (not ready, paused),
// and a VMI without a readiness probe is ready while its domain runs, which
// the handler says too (domain.Status).
func syncProbedReady(st *virtv1.VirtualMachineInstanceStatus, vmi *virtv1.VirtualMachineInstance, pod *corev1.Pod, ts metav1.Time) {
	if vmi.Spec.ReadinessProbe == nil || st.Phase != virtv1.Running || pod.DeletionTimestamp != nil || !IsCurrentPod(vmi, pod) ||
		conditions.VMI().Find(st.Conditions, virtv1.VirtualMachineInstancePaused) != nil {
		return
	}
	ready := virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceReady, Status: corev1.ConditionFalse,
		Reason: virtv1.PodConditionMissingReason, Message: "virt-launcher pod is missing the Ready condition"}
	if c := conditions.Pod().Find(pod.Status.Conditions, corev1.PodReady); c != nil {
		ready.Status, ready.Reason, ready.Message = c.Status, c.Reason, c.Message
	}
	conditions.VMI().Set(&st.Conditions, ready, ts)
}

// syncLauncherImage records, as KubeVirt does, the image of the launcher
// that holds the guest (status.launcherContainerImageVersion): the current
// pod's once it is bound to a node, the target's once a migration made it
// current. controllers/workloadupdate compares it with the image in force.
// KubeVirt records it once the VMI runs; recording it at the bind, which
// this controller writes anyway, costs no write of its own.
func syncLauncherImage(st *virtv1.VirtualMachineInstanceStatus, pod *corev1.Pod) {
	if (st.Phase != virtv1.Scheduled && st.Phase != virtv1.Running) || pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil {
		return
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == ComputeContainer {
			st.LauncherContainerImageVersion = c.Image
		}
	}
}

// syncImagePull says on the VMI, as KubeVirt does, that its launcher pod
// cannot get an image (a containerDisk or the launcher's own): the
// Synchronized condition goes False with the container's reason
// (ErrImagePull, ImagePullBackOff) and message, which the VM shows as its
// printable status. It is dropped once no container waits for an image.
func syncImagePull(st *virtv1.VirtualMachineInstanceStatus, pod *corev1.Pod, ts metav1.Time) {
	var waiting *corev1.ContainerStateWaiting
	for _, cs := range append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && (w.Reason == ReasonErrImagePull || w.Reason == ReasonImagePullBackOff) {
			waiting = w
			break
		}
	}
	c := conditions.VMI().Find(st.Conditions, virtv1.VirtualMachineInstanceSynchronized)
	mine := c != nil && (c.Reason == ReasonErrImagePull || c.Reason == ReasonImagePullBackOff)
	switch {
	case waiting != nil && (c == nil || mine): // the handler's own reasons stay
		conditions.VMI().Set(&st.Conditions, virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceSynchronized,
			Status: corev1.ConditionFalse, Reason: waiting.Reason, Message: waiting.Message, LastTransitionTime: ts}, ts)
	case waiting == nil && mine:
		conditions.VMI().Remove(&st.Conditions, virtv1.VirtualMachineInstanceSynchronized)
	}
}

// syncPodScheduled mirrors a false PodScheduled condition of the pod on the
// VMI, reason and message included, and drops it once the pod is scheduled.
func syncPodScheduled(st *virtv1.VirtualMachineInstanceStatus, pod *corev1.Pod, ts metav1.Time) {
	if c := conditions.Pod().Find(pod.Status.Conditions, corev1.PodScheduled); c != nil && c.Status != corev1.ConditionTrue {
		// A pod condition without a transition time is stamped now.
		conditions.VMI().Set(&st.Conditions, virtv1.VirtualMachineInstanceCondition{Type: PodScheduled, Status: c.Status,
			Reason: c.Reason, Message: c.Message, LastProbeTime: c.LastProbeTime, LastTransitionTime: c.LastTransitionTime}, ts)
		return
	}
	conditions.VMI().Remove(&st.Conditions, PodScheduled)
}

func computeTerminated(pod *corev1.Pod) *corev1.ContainerStateTerminated {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == ComputeContainer {
			return cs.State.Terminated
		}
	}
	return nil
}

// podEndReason names why an ended pod ended: the launcher's exit code and
// termination message when the compute container ran, else the pod's.
func podEndReason(pod *corev1.Pod) (reason, message string) {
	if t := computeTerminated(pod); t != nil {
		msg := strings.TrimSpace(t.Message)
		if msg == "" {
			msg = fmt.Sprintf("launcher exited with code %d (%s)", t.ExitCode, t.Reason)
		}
		return LauncherExitReason(int(t.ExitCode)), msg
	}
	reason, msg := ReasonPodFailed, pod.Status.Message
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason // e.g. Evicted
	}
	if pod.Status.Phase == corev1.PodSucceeded {
		reason = ReasonPodCompleted
	}
	if msg == "" {
		msg = "the launcher pod ended in phase " + string(pod.Status.Phase)
	}
	return reason, msg
}
