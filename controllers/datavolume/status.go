package datavolume

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/virtkit/virtkit/virt/storage/dvspec"
	"github.com/virtkit/virtkit/virt/storage/importer/contract"
)

// Event reasons and condition reasons, as CDI's.
const (
	ReasonImportScheduled   = "ImportScheduled"
	ReasonImportInProgress  = "ImportInProgress"
	ReasonImportSucceeded   = "ImportSucceeded"
	ReasonImportFailed      = "ErrImportFailed"
	ReasonResourceExists    = "ErrResourceExists"
	ReasonClaimAdopted      = "ClaimAdopted"
	ReasonInvalidSpec       = "ErrInvalidSpec"
	ReasonBound             = "Bound"
	ReasonPending           = "Pending"
	ReasonClaimLost         = "ClaimLost"
	ReasonNotFound          = "NotFound"
	ReasonPodRunning        = "Pod is running"
	ReasonTransferRunning   = "TransferRunning"
	ReasonCompleted         = "Completed"
	ReasonImagePullFailed   = "ImagePullFailed"
	progressDone            = cdiv1.DataVolumeProgress("100.0%")
	progressUnknown         = cdiv1.DataVolumeProgress("N/A")
	messageResourceExists   = "Resource %q already exists and is not managed by DataVolume"
	messageImportScheduled  = "Import into %s scheduled"
	messageImportInProgress = "Import into %s in progress"
	messageImportSucceeded  = "Successfully imported into PVC %s"
	messageImportFailed     = "Failed to import into PVC %s"

	ReasonCloneScheduled   = "CloneScheduled"
	ReasonCloneInProgress  = "CloneInProgress"
	ReasonCloneSucceeded   = "CloneSucceeded"
	ReasonCloneSourceInUse = "CloneSourceInUse"
	ReasonCloneNoSource    = "CloneWithoutSource"
	// ReasonSnapshotFailed: the snapshot a snapshot clone is made from
	// reports an error (the snapshotter retries).
	ReasonSnapshotFailed = "SnapshotFailed"
	// Phases of a clone the storage makes are also their events' reasons.
	messageSnapshotInProgress     = "Creating snapshot for smart-clone is in progress (for %s)"
	messageFromSnapshotInProgress = "Creating PVC from snapshot source is in progress (for %s)"
	messageCSICloneInProgress     = "CSI Volume clone in progress (for %s)"
	messageCloneScheduled         = "Cloning from %s into %s scheduled"
	messageCloneInProgress        = "Cloning from %s into %s in progress"
	messageCloneSucceeded         = "Successfully cloned from %s into %s"

	ReasonUploadScheduled     = "UploadScheduled"
	ReasonUploadReady         = "UploadReady"
	ReasonUploadSucceeded     = "UploadSucceeded"
	ReasonUploadNotConfigured = "UploadNotConfigured"
	messageUploadScheduled    = "Upload into %s scheduled"
	messageUploadReady        = "Upload into %s ready"
	messageUploadSucceeded    = "Successfully uploaded into %s"
)

// stages are the phases and events of an import or a clone.
type stages struct {
	scheduled, inProgress                  cdiv1.DataVolumePhase
	evScheduled, evInProgress, evSucceeded string
	msgScheduled, msgInProgress, msgDone   func(claim string) string
}

func stagesOf(src dvspec.Source) stages {
	if src.IsUpload() {
		// In progress is ready for the upload: the pod waits for its user.
		return stages{cdiv1.UploadScheduled, cdiv1.UploadReady, ReasonUploadScheduled, ReasonUploadReady, ReasonUploadSucceeded,
			func(c string) string { return fmt.Sprintf(messageUploadScheduled, c) },
			func(c string) string { return fmt.Sprintf(messageUploadReady, c) },
			func(c string) string { return fmt.Sprintf(messageUploadSucceeded, c) }}
	}
	if src.IsClone() {
		from := cloneSource(src)
		return stages{cdiv1.CloneScheduled, cdiv1.CloneInProgress, ReasonCloneScheduled, ReasonCloneInProgress, ReasonCloneSucceeded,
			func(c string) string { return fmt.Sprintf(messageCloneScheduled, from, c) },
			func(c string) string { return fmt.Sprintf(messageCloneInProgress, from, c) },
			func(c string) string { return fmt.Sprintf(messageCloneSucceeded, from, c) }}
	}
	return stages{cdiv1.ImportScheduled, cdiv1.ImportInProgress, ReasonImportScheduled, ReasonImportInProgress, ReasonImportSucceeded,
		func(c string) string { return fmt.Sprintf(messageImportScheduled, c) },
		func(c string) string { return fmt.Sprintf(messageImportInProgress, c) },
		func(c string) string { return fmt.Sprintf(messageImportSucceeded, c) }}
}

// cloneSource names a clone's source in messages: NAMESPACE/NAME of its
// claim, once known.
func cloneSource(src dvspec.Source) string {
	if src.Claim != nil {
		return src.Claim.Namespace + "/" + src.Claim.Name
	}
	return src.Describe()
}

// smartMessages are the messages of the phases of clones the storage
// makes, CDI's, each taking smartSource.
var smartMessages = map[cdiv1.DataVolumePhase]string{
	cdiv1.SnapshotForSmartCloneInProgress:   messageSnapshotInProgress,
	cdiv1.CloneFromSnapshotSourceInProgress: messageFromSnapshotInProgress,
	cdiv1.CSICloneInProgress:                messageCSICloneInProgress,
}

// smartSource names a clone's source as CDI's messages do: "pvc NS/NAME"
// or "snapshot NS/NAME".
func smartSource(src dvspec.Source) string {
	if s := src.Snapshot; s != nil {
		return "snapshot " + s.Namespace + "/" + s.Name
	}
	return "pvc " + cloneSource(src)
}

// Event is one event NextStatus asks to record on the DataVolume.
type Event struct {
	Type, Reason, Message string
}

// Observed is what the reconciler saw of a DataVolume's world.
type Observed struct {
	// Invalid is why the DataVolume's spec cannot work, if it cannot.
	Invalid error
	// Claim is the claim named as the DataVolume, if there is one;
	// Foreign is set when the DataVolume does not control it.
	Claim   *corev1.PersistentVolumeClaim
	Foreign bool
	// Populated is set once the importer succeeded for this DataVolume.
	Populated bool
	// Pod is its importer pod, if there is one.
	Pod *corev1.Pod
	// Progress is the importer's progress in percent, if it reported any.
	Progress *float64
	// Source is the DataVolume's source: a clone has clone phases.
	Source dvspec.Source
	// Blocked says why the importer pod cannot start yet (a clone's source
	// claim missing or in use), with its reason; empty when it can.
	Blocked, BlockedReason string
	// Smart is how the storage fills a clone's claim (csi-clone or
	// snapshot), "" when a pod fills it; Preparing is the phase of a
	// clone whose claim waits for what the storage makes first (the
	// snapshot of a snapshot clone, the clone in the source's namespace of
	// a CSI clone into another), "" otherwise.
	Smart     cdiv1.CDICloneStrategy
	Preparing cdiv1.DataVolumePhase
	// WaitsForConsumer is set while the claim, of a class that binds on
	// first consumer, waits for a workload's pod to bind it before any
	// pod fills it (CDI's HonorWaitForFirstConsumer); PendingPopulation
	// while a smart clone's claim of such a class waits for the scheduler
	// to pick the node of the pod that will bind it.
	WaitsForConsumer, PendingPopulation bool
}

// NextStatus returns dv's status for what was observed, and the events
// worth recording: the phase's when it changes, and a warning for each
// failed attempt of the importer.
func NextStatus(dv *cdiv1.DataVolume, o Observed, now metav1.Time) (cdiv1.DataVolumeStatus, []Event) {
	st := *dv.Status.DeepCopy()
	if st.Progress == "" {
		st.Progress = progressUnknown
	}
	set := func(t cdiv1.DataVolumeConditionType, s corev1.ConditionStatus, reason, msg string) {
		st.Conditions = setCondition(st.Conditions, t, s, reason, msg, now)
	}
	var evs []Event
	phase := func(p cdiv1.DataVolumePhase, typ, reason, msg string) {
		if st.Phase != p && reason != "" {
			evs = append(evs, Event{Type: typ, Reason: reason, Message: msg})
		}
		st.Phase = p
	}
	if dv.Status.Phase == cdiv1.Failed && o.Pod == nil && o.Invalid == nil {
		// A failed import is final: the DataVolume keeps its status.
		return st, nil
	}
	switch {
	case o.Invalid != nil:
		set(cdiv1.DataVolumeBound, corev1.ConditionFalse, ReasonNotFound, "No PVC found")
		set(cdiv1.DataVolumeRunning, corev1.ConditionFalse, ReasonInvalidSpec, o.Invalid.Error())
		set(cdiv1.DataVolumeReady, corev1.ConditionFalse, ReasonInvalidSpec, o.Invalid.Error())
		phase(cdiv1.Failed, corev1.EventTypeWarning, ReasonInvalidSpec, o.Invalid.Error())
		return st, evs
	case o.Claim == nil:
		set(cdiv1.DataVolumeBound, corev1.ConditionFalse, ReasonNotFound, "No PVC found")
		set(cdiv1.DataVolumeReady, corev1.ConditionFalse, "", "")
		if o.Blocked != "" {
			set(cdiv1.DataVolumeRunning, corev1.ConditionFalse, o.BlockedReason, o.Blocked)
		}
		if p := o.Preparing; p != "" {
			phase(p, corev1.EventTypeNormal, string(p), fmt.Sprintf(smartMessages[p], smartSource(o.Source)))
			return st, evs
		}
		if st.Phase == "" {
			st.Phase = cdiv1.Pending
		}
		return st, nil
	case o.Foreign:
		msg := fmt.Sprintf(messageResourceExists, o.Claim.Name)
		set(cdiv1.DataVolumeBound, corev1.ConditionFalse, ReasonResourceExists, msg)
		set(cdiv1.DataVolumeReady, corev1.ConditionFalse, "", "")
		if st.Phase != cdiv1.Pending {
			evs = append(evs, Event{Type: corev1.EventTypeWarning, Reason: ReasonResourceExists, Message: msg})
		}
		st.Phase = cdiv1.Pending
		return st, evs
	}
	st.ClaimName = o.Claim.Name
	sg := stagesOf(o.Source)
	switch o.Claim.Status.Phase {
	case corev1.ClaimBound:
		set(cdiv1.DataVolumeBound, corev1.ConditionTrue, ReasonBound, fmt.Sprintf("PVC %s Bound", o.Claim.Name))
	case corev1.ClaimLost:
		set(cdiv1.DataVolumeBound, corev1.ConditionFalse, ReasonClaimLost, "Claim Lost")
	default:
		set(cdiv1.DataVolumeBound, corev1.ConditionFalse, ReasonPending, fmt.Sprintf("PVC %s Pending", o.Claim.Name))
	}
	if o.Populated {
		done := "Import Complete"
		switch {
		case o.Source.IsClone():
			done = "Clone Complete"
		case o.Source.IsUpload():
			done = "Upload Complete"
		}
		set(cdiv1.DataVolumeRunning, corev1.ConditionFalse, ReasonCompleted, done)
		set(cdiv1.DataVolumeReady, corev1.ConditionTrue, "", "")
		st.Progress = progressDone
		phase(cdiv1.Succeeded, corev1.EventTypeNormal, sg.evSucceeded, sg.msgDone(o.Claim.Name))
		return st, evs
	}
	set(cdiv1.DataVolumeReady, corev1.ConditionFalse, "", "")
	if o.Smart != "" {
		// The storage copies as it binds the claim: no pod, no progress.
		set(cdiv1.DataVolumeRunning, corev1.ConditionFalse, "", "")
		if o.PendingPopulation {
			st.Phase = cdiv1.PendingPopulation
			return st, evs
		}
		p := cdiv1.CSICloneInProgress
		if o.Smart == cdiv1.CloneStrategySnapshot {
			p = cdiv1.CloneFromSnapshotSourceInProgress
		}
		phase(p, corev1.EventTypeNormal, string(p), fmt.Sprintf(smartMessages[p], smartSource(o.Source)))
		return st, evs
	}
	pod := o.Pod
	if pod == nil {
		if o.Claim.Status.Phase != corev1.ClaimBound {
			st.Phase = cdiv1.Pending
			if o.WaitsForConsumer {
				st.Phase = cdiv1.WaitForFirstConsumer
			}
			set(cdiv1.DataVolumeRunning, corev1.ConditionFalse, "", "")
			return st, nil
		}
		if o.Blocked != "" {
			set(cdiv1.DataVolumeRunning, corev1.ConditionFalse, o.BlockedReason, o.Blocked)
			st.Phase = cdiv1.Pending
			return st, evs
		}
		// The reconciler creates the pod next.
		phase(sg.scheduled, corev1.EventTypeNormal, sg.evScheduled, sg.msgScheduled(o.Claim.Name))
		return st, evs
	}
	var cs *corev1.ContainerStatus
	if len(pod.Status.ContainerStatuses) > 0 {
		cs = &pod.Status.ContainerStatuses[0]
		if cs.RestartCount > st.RestartCount {
			st.RestartCount = cs.RestartCount
			if cs.LastTerminationState.Terminated != nil {
				// Each failed attempt is worth a warning saying why.
				out := outcomeOf(&corev1.ContainerStatus{State: cs.LastTerminationState})
				evs = append(evs, Event{Type: corev1.EventTypeWarning, Reason: ReasonImportFailed, Message: out.Message})
			}
		}
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		out := outcomeOf(cs)
		if pod.Status.Phase == corev1.PodSucceeded && !out.Fatal {
			// The reconciler marks the claim populated before it deletes
			// the pod; until then the DataVolume is still in progress.
			set(cdiv1.DataVolumeRunning, corev1.ConditionFalse, ReasonCompleted, out.Message)
			phase(sg.inProgress, corev1.EventTypeNormal, sg.evInProgress, sg.msgInProgress(o.Claim.Name))
			return st, evs
		}
		reason := out.Reason
		if reason == "" {
			reason = "Error"
		}
		set(cdiv1.DataVolumeRunning, corev1.ConditionFalse, reason, out.Message)
		set(cdiv1.DataVolumeReady, corev1.ConditionFalse, reason, out.Message)
		phase(cdiv1.Failed, corev1.EventTypeWarning, ReasonImportFailed, fmt.Sprintf(messageImportFailed+": %s", o.Claim.Name, out.Message))
		return st, evs
	}
	switch {
	case cs != nil && cs.State.Running != nil && o.Source.IsUpload() && !cs.Ready:
		// An upload server is ready once it takes connections.
		set(cdiv1.DataVolumeRunning, corev1.ConditionTrue, ReasonPodRunning, "")
		phase(sg.scheduled, corev1.EventTypeNormal, sg.evScheduled, sg.msgScheduled(o.Claim.Name))
	case cs != nil && cs.State.Running != nil:
		set(cdiv1.DataVolumeRunning, corev1.ConditionTrue, ReasonPodRunning, "")
		set(cdiv1.DataVolumeReady, corev1.ConditionFalse, ReasonTransferRunning, "")
		if o.Progress != nil {
			st.Progress = cdiv1.DataVolumeProgress(fmt.Sprintf("%.2f%%", *o.Progress))
		}
		phase(sg.inProgress, corev1.EventTypeNormal, sg.evInProgress, sg.msgInProgress(o.Claim.Name))
	case cs != nil && cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
		// Restarting after a failure the importer deems retryable.
		out := outcomeOf(&corev1.ContainerStatus{State: cs.LastTerminationState})
		reason := cs.LastTerminationState.Terminated.Reason
		if reason == "" {
			reason = "Error"
		}
		set(cdiv1.DataVolumeRunning, corev1.ConditionFalse, reason, out.Message)
		phase(sg.inProgress, corev1.EventTypeNormal, sg.evInProgress, sg.msgInProgress(o.Claim.Name))
	case cs != nil && cs.State.Waiting != nil:
		reason, msg := cs.State.Waiting.Reason, cs.State.Waiting.Message
		if reason == "ImagePullBackOff" || reason == "ErrImagePull" || reason == "InvalidImageName" {
			reason, msg = ReasonImagePullFailed, "failed to pull image: "+cs.Image
		}
		set(cdiv1.DataVolumeRunning, corev1.ConditionFalse, reason, msg)
		phase(sg.scheduled, corev1.EventTypeNormal, sg.evScheduled, sg.msgScheduled(o.Claim.Name))
	default:
		set(cdiv1.DataVolumeRunning, corev1.ConditionFalse, "", "")
		phase(sg.scheduled, corev1.EventTypeNormal, sg.evScheduled, sg.msgScheduled(o.Claim.Name))
	}
	return st, evs
}

// outcomeOf reads the importer's termination message from a finished
// container; a message that is not an Outcome is taken as plain text.
func outcomeOf(cs *corev1.ContainerStatus) contract.Outcome {
	if cs == nil || cs.State.Terminated == nil {
		return contract.Outcome{Message: "the importer ended without a status"}
	}
	t := cs.State.Terminated
	if out, err := contract.ParseOutcome(t.Message); err == nil {
		return out
	}
	msg := t.Message
	if msg == "" {
		msg = fmt.Sprintf("the importer exited with code %d (%s)", t.ExitCode, t.Reason)
	}
	return contract.Outcome{Message: msg}
}

// setCondition sets one condition as CDI does: the transition time moves
// when the status changes, the heartbeat when reason or message do.
func setCondition(cs []cdiv1.DataVolumeCondition, t cdiv1.DataVolumeConditionType, s corev1.ConditionStatus, reason, msg string, now metav1.Time) []cdiv1.DataVolumeCondition {
	for i := range cs {
		c := &cs[i]
		if c.Type != t {
			continue
		}
		if c.Status != s {
			c.LastTransitionTime, c.LastHeartbeatTime = now, now
		} else if c.Reason != reason || c.Message != msg {
			c.LastHeartbeatTime = now
		}
		c.Status, c.Reason, c.Message = s, reason, msg
		return cs
	}
	return append(cs, cdiv1.DataVolumeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: now, LastHeartbeatTime: now})
}
