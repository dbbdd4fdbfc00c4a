package node

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reasons the node gives in pod and container statuses beyond the
// kubelet's own (Completed, Error, ContainerCreating, ErrImagePull,
// CrashLoopBackOff, PodCompleted, ContainersNotReady).
const (
	// ReasonNodeRestarted: the node restarted and found the pod's
	// processes gone; the pod is Failed.
	ReasonNodeRestarted = "NodeRestarted"
	// ReasonStartError: the container's command could not be started
	// (missing executable, bad mount); exit code 128.
	ReasonStartError = "StartError"
	// ReasonContainerStatusUnknown: the process ended while the node did
	// not watch it; exit code 137, as the kubelet reports it.
	ReasonContainerStatusUnknown = "ContainerStatusUnknown"
	// ReasonCreateContainerConfigError: the container cannot be run as
	// specified (no command: the image's entrypoint is not known).
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
)

// podFacts is what the node knows of a pod at run time: the input of its
// status.
type podFacts struct {
	InitContainers []corev1.ContainerStatus
	Containers     []corev1.ContainerStatus
	// SandboxReady: the network namespace is set up.
	SandboxReady bool
	PodIPs       []string
	HostIP       string
	StartTime    *metav1.Time
	// Terminating: the pod is being deleted, so nothing restarts.
	Terminating bool
	// Shutdown: the pod is stopped because the node stops; it ends Failed
	// with reason Terminated, as the kubelet's graceful node shutdown does.
	Shutdown bool
	// Phase overrides the computed phase (a pod lost with its node).
	Phase corev1.PodPhase
	// Reason and Message are the pod's once it is terminal.
	Reason, Message string
}

// podStatus computes the status of pod from the facts. It keeps what is not
// the node's to say (conditions of other types, the QoS class) and the
// transition times of conditions that did not change; now stamps the ones
// that did. A terminal phase is final.
func podStatus(pod *corev1.Pod, f podFacts, now metav1.Time) corev1.PodStatus {
	old := pod.Status
	st := corev1.PodStatus{
		Phase:                 f.Phase,
		QOSClass:              old.QOSClass,
		NominatedNodeName:     old.NominatedNodeName,
		StartTime:             f.StartTime,
		InitContainerStatuses: copyStatuses(f.InitContainers),
		ContainerStatuses:     copyStatuses(f.Containers),
	}
	if st.Phase == "" {
		st.Phase = podPhase(&pod.Spec, f)
	}
	if st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed {
		st.Reason, st.Message = f.Reason, f.Message
		if f.Shutdown {
			st.Phase, st.Reason, st.Message = corev1.PodFailed, "Terminated", "the local node stopped"
		}
	}
	if old.Phase == corev1.PodSucceeded || old.Phase == corev1.PodFailed {
		st.Phase = old.Phase
		if st.Reason == "" {
			st.Reason, st.Message = old.Reason, old.Message
		}
	}
	if f.HostIP != "" {
		st.HostIP = f.HostIP
		st.HostIPs = []corev1.HostIP{{IP: f.HostIP}}
	}
	if len(f.PodIPs) > 0 {
		st.PodIP = f.PodIPs[0]
		for _, ip := range f.PodIPs {
			st.PodIPs = append(st.PodIPs, corev1.PodIP{IP: ip})
		}
	}

	owned := map[corev1.PodConditionType]bool{}
	cond := func(t corev1.PodConditionType, ok bool, reason, message string) {
		owned[t] = true
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: message, LastTransitionTime: now}
		if ok {
			c.Status, c.Reason, c.Message = corev1.ConditionTrue, "", ""
		}
		for _, o := range old.Conditions {
			if o.Type == t && o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
		st.Conditions = append(st.Conditions, c)
	}
	terminal := st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed

	cond(corev1.PodReadyToStartContainers, f.SandboxReady && !terminal, "", "")
	initialized := true
	var waitingInit []string
	for _, c := range f.InitContainers {
		if t := c.State.Terminated; t == nil || t.ExitCode != 0 {
			initialized = false
			waitingInit = append(waitingInit, c.Name)
		}
	}
	cond(corev1.PodInitialized, initialized, "ContainersNotInitialized",
		fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(waitingInit, " ")))

	var unready []string
	for _, c := range f.Containers {
		if !c.Ready {
			unready = append(unready, c.Name)
		}
	}
	reason, message := "ContainersNotReady", fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	if terminal {
		reason, message = "PodCompleted", ""
	}
	containersReady := len(unready) == 0 && !terminal
	cond(corev1.ContainersReady, containersReady, reason, message)

	ready, readyReason, readyMessage := containersReady, reason, message
	if containersReady {
		var gates []string
		for _, g := range pod.Spec.ReadinessGates {
			if !conditionTrue(old.Conditions, g.ConditionType) {
				gates = append(gates, string(g.ConditionType))
			}
		}
		if len(gates) > 0 {
			ready, readyReason = false, "ReadinessGatesNotReady"
			readyMessage = fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist or is not True", strings.Join(gates, ", "))
		}
	}
	cond(corev1.PodReady, ready, readyReason, readyMessage)

	var others []corev1.PodCondition
	for _, o := range old.Conditions {
		if !owned[o.Type] {
			others = append(others, o)
		}
	}
	st.Conditions = append(others, st.Conditions...)
	return st
}

// copyStatuses copies container statuses, so that a status never shares
// memory with the facts it was computed from.
func copyStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if in == nil {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

func conditionTrue(conds []corev1.PodCondition, t corev1.PodConditionType) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podPhase is the kubelet's phase rule (pkg/kubelet's getPhase): Pending
// until every container started, Running while one runs or will be
// restarted, then Succeeded when all ended with 0, else Failed. A pod being
// deleted restarts nothing.
func podPhase(spec *corev1.PodSpec, f podFacts) corev1.PodPhase {
	policy := spec.RestartPolicy
	if f.Terminating {
		policy = corev1.RestartPolicyNever
	}
	for _, c := range f.InitContainers {
		t := c.State.Terminated
		switch {
		case t != nil && t.ExitCode == 0:
			continue
		case t != nil && policy == corev1.RestartPolicyNever:
			return corev1.PodFailed
		default:
			return corev1.PodPending
		}
	}
	var waiting, running, stopped, succeeded int
	for _, c := range f.Containers {
		switch {
		case c.State.Running != nil:
			running++
		case c.State.Terminated != nil:
			stopped++
			if c.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case c.LastTerminationState.Terminated != nil:
			stopped++ // waiting to be restarted
		default:
			waiting++
		}
	}
	switch {
	case waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped > 0:
		if policy == corev1.RestartPolicyAlways {
			return corev1.PodRunning
		}
		if stopped == succeeded {
			return corev1.PodSucceeded
		}
		if policy == corev1.RestartPolicyNever {
			return corev1.PodFailed
		}
		return corev1.PodRunning
	default:
		return corev1.PodPending
	}
}

// restarts reports whether a container that ended with exit code under
// policy is started again.
func restarts(policy corev1.RestartPolicy, exitCode int32) bool {
	switch policy {
	case corev1.RestartPolicyAlways:
		return true
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	default:
		return false
	}
}
