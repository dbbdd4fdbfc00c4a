package handler

import (
	"fmt"

	k8sv1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/controllers/events"
	vmictrl "github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/virt/storage/hotplug"
)

// EventRecorder is the part of client-go's record.EventRecorder the handler
// uses; the manager's recorder satisfies it.
type EventRecorder = events.Recorder

// ReasonSyncFailed is the reason of the Warning event of a start that
// failed: KubeVirt's virt-handler's SyncFailed.
const ReasonSyncFailed = string(virtv1.SyncFailed)

// Warning is a Warning event a status change calls for: a failure the
// VMI's owner must act on.
type Warning = vmictrl.Warning

// StatusWarnings are the Warning events the handler records on vmi when it
// writes next as its status, one per failure next reports that vmi's
// status did not:
//
//   - a start that failed (Synchronized=False, reason
//     ReasonSynchronizationFailed, with a new message): SyncFailed, with
//     why (the domain did not define or start, storage could not be
//     prepared, a claim or secret is missing...);
//   - the VMI failing (phase Failed: the guest crashed or was destroyed,
//     its launcher died or was lost...): status.reason, with the Ready
//     condition's message;
//   - access credentials that could not be set through the guest agent
//     (AccessCredentialsSynchronized turning False, or its message
//     changing): AccessCredentialsSyncFailed, as KubeVirt's handler says;
//   - a hotplugged volume that cannot be attached (a volume status turning
//     to VolumeAttachFailed, or its message changing): VolumeAttachFailed,
//     naming the volume.
func StatusWarnings(vmi *virtv1.VirtualMachineInstance, next virtv1.VirtualMachineInstanceStatus) []Warning {
	var out []Warning
	old := &vmi.Status
	if c := conditions.VMI().Find(next.Conditions, virtv1.VirtualMachineInstanceSynchronized); c != nil && c.Status == k8sv1.ConditionFalse && c.Reason == ReasonSynchronizationFailed {
		if o := conditions.VMI().Find(old.Conditions, virtv1.VirtualMachineInstanceSynchronized); o == nil || o.Status != c.Status || o.Reason != c.Reason || o.Message != c.Message {
			out = append(out, Warning{Reason: ReasonSyncFailed, Message: c.Message})
		}
	}
	if next.Phase == virtv1.Failed && old.Phase != virtv1.Failed {
		w := Warning{Reason: next.Reason, Message: "the VirtualMachineInstance failed"}
		if w.Reason == "" {
			w.Reason = string(virtv1.Failed)
		}
		if c := conditions.VMI().Find(next.Conditions, virtv1.VirtualMachineInstanceReady); c != nil && c.Message != "" {
			w.Message += ": " + c.Message
		}
		out = append(out, w)
	}
	if c := conditions.VMI().Find(next.Conditions, virtv1.VirtualMachineInstanceAccessCredentialsSynchronized); c != nil && c.Status == k8sv1.ConditionFalse {
		if o := conditions.VMI().Find(old.Conditions, virtv1.VirtualMachineInstanceAccessCredentialsSynchronized); o == nil || o.Status != c.Status || o.Message != c.Message {
			out = append(out, Warning{Reason: string(virtv1.AccessCredentialsSyncFailed), Message: "Access credentials sync failed: " + c.Message})
		}
	}
	was := map[string]virtv1.VolumeStatus{}
	for _, v := range old.VolumeStatus {
		was[v.Name] = v
	}
	for _, v := range next.VolumeStatus {
		if v.Reason != hotplug.ReasonAttachFailed {
			continue
		}
		if o, ok := was[v.Name]; ok && o.Reason == v.Reason && o.Message == v.Message {
			continue
		}
		out = append(out, Warning{Reason: hotplug.ReasonAttachFailed,
			Message: fmt.Sprintf("%s (%s): %s", volumeField(vmi, v.Name), v.Name, v.Message)})
	}
	return out
}

// volumeField is the spec field of the volume called name.
func volumeField(vmi *virtv1.VirtualMachineInstance, name string) string {
	for i, v := range vmi.Spec.Volumes {
		if v.Name == name {
			return fmt.Sprintf("spec.volumes[%d]", i)
		}
	}
	return "spec.volumes"
}

// warn records the Warning events of writing next over vmi's status.
func (r *Reconciler) warn(vmi *virtv1.VirtualMachineInstance, next virtv1.VirtualMachineInstanceStatus) {
	for _, w := range StatusWarnings(vmi, next) {
		r.recorder.Eventf(vmi, k8sv1.EventTypeWarning, w.Reason, "%s", w.Message)
	}
}
