package snapshot

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
)

// DefaultFailureDeadline is how long a snapshot may take when its spec
// sets no failureDeadline, as with KubeVirt.
const DefaultFailureDeadline = 5 * 60 // seconds

// SetCondition puts c into conds in place of the condition of its type,
// keeping the last transition time when the status is unchanged.
func SetCondition(conds []vmsnapshotv1.Condition, c vmsnapshotv1.Condition) []vmsnapshotv1.Condition {
	for i := range conds {
		if conds[i].Type != c.Type {
			continue
		}
		if conds[i].Status == c.Status {
			c.LastTransitionTime = conds[i].LastTransitionTime
		}
		conds[i] = c
		return conds
	}
	return append(conds, c)
}

// Condition is a condition of type t, status s, with reason as both its
// reason and its message (as KubeVirt writes them), at now.
func Condition(t vmsnapshotv1.ConditionType, s corev1.ConditionStatus, reason string, now metav1.Time) vmsnapshotv1.Condition {
	return vmsnapshotv1.Condition{Type: t, Status: s, Reason: reason, Message: reason, LastProbeTime: now, LastTransitionTime: now}
}

// indicationMessages say what each indication means for the snapshot.
var indicationMessages = map[vmsnapshotv1.Indication]string{
	vmsnapshotv1.VMSnapshotOnlineSnapshotIndication: "Taken while the VM ran: how consistent it is depends on quiescing its file systems.",
	vmsnapshotv1.VMSnapshotGuestAgentIndication:     "The guest agent was connected: the guest's file systems were frozen while the volumes were copied.",
	vmsnapshotv1.VMSnapshotNoGuestAgentIndication:   "No guest agent was connected: the copy is crash-consistent, as if the VM had lost power.",
	vmsnapshotv1.VMSnapshotPausedIndication:         "Taken while the VM was paused: the copy is crash-consistent.",
}

// Indications are what a snapshot of a VM whose instance is vmi (nil when
// it does not run) says about its consistency, as KubeVirt says it: none
// for a stopped VM; Online, and Paused, GuestAgent or NoGuestAgent, for a
// running one. GuestAgent needs both a connected agent and canFreeze (the
// snapshot will freeze the guest's file systems).
func Indications(vmi *virtv1.VirtualMachineInstance, canFreeze bool) ([]vmsnapshotv1.Indication, []vmsnapshotv1.SourceIndication) {
	if vmi == nil {
		return nil, nil
	}
	set := []vmsnapshotv1.Indication{vmsnapshotv1.VMSnapshotOnlineSnapshotIndication}
	switch {
	case hasCondition(vmi, virtv1.VirtualMachineInstancePaused):
		set = append(set, vmsnapshotv1.VMSnapshotPausedIndication)
	case canFreeze && hasCondition(vmi, virtv1.VirtualMachineInstanceAgentConnected):
		set = append(set, vmsnapshotv1.VMSnapshotGuestAgentIndication)
	default:
		set = append(set, vmsnapshotv1.VMSnapshotNoGuestAgentIndication)
	}
	sort.Slice(set, func(i, j int) bool { return set[i] < set[j] })
	src := make([]vmsnapshotv1.SourceIndication, 0, len(set))
	for _, i := range set {
		src = append(src, vmsnapshotv1.SourceIndication{Indication: i, Message: indicationMessages[i]})
	}
	return set, src
}

func hasCondition(vmi *virtv1.VirtualMachineInstance, t virtv1.VirtualMachineInstanceConditionType) bool {
	for _, c := range vmi.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// Freezes reports whether a snapshot with status st freezes its source's
// file systems: it said GuestAgent.
func Freezes(st *vmsnapshotv1.VirtualMachineSnapshotStatus) bool {
	if st == nil {
		return false
	}
	for _, i := range st.SourceIndications {
		if i.Indication == vmsnapshotv1.VMSnapshotGuestAgentIndication {
			return true
		}
	}
	return false
}
