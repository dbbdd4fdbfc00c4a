package migration

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/virtkit/virtkit/controllers/conditions"
	vmictl "github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/virt/migrate"
)

// Finalizer keeps a migration until its end is settled: a deleted migration
// that runs is aborted, and its target pod removed, before it goes.
// KubeVirt's name.
const Finalizer = virtv1.VirtualMachineInstanceMigrationFinalizer

// UnschedulableTimeout is how long a target pod may stay unschedulable
// before its migration fails (KubeVirt's default).
const UnschedulableTimeout = 5 * time.Minute

// PendingTimeout is how long a target pod may take otherwise, from its
// creation, to get a node and become Ready (its image pulled, its launcher
// up) before its migration fails: KubeVirt's catch-all pending timeout.
const PendingTimeout = 15 * time.Minute

// HandlerTimeout is how long a migration may wait in PreparingTarget (on
// the target's handler) or TargetReady (on the source's handler, to start
// it). Each takes seconds while the handlers run, so a migration still
// waiting after HandlerTimeout has lost a handler: it fails, its target
// pod goes and its parallel slot is free again. Once the source's handler
// started it (Running), that handler's progress and completion timeouts
// bound it.
const HandlerTimeout = 5 * time.Minute

// Timeouts bound the steps of a migration before it runs. A zero field
// takes its default: UnschedulableTimeout, PendingTimeout, HandlerTimeout.
type Timeouts struct {
	Unschedulable time.Duration
	Pending       time.Duration
	Handler       time.Duration
}

func (t Timeouts) withDefaults() Timeouts {
	if t.Unschedulable <= 0 {
		t.Unschedulable = UnschedulableTimeout
	}
	if t.Pending <= 0 {
		t.Pending = PendingTimeout
	}
	if t.Handler <= 0 {
		t.Handler = HandlerTimeout
	}
	return t
}

// Observed is what the controller knows of one migration when it decides
// its next step.
type Observed struct {
	// Migration is the migration.
	Migration *virtv1.VirtualMachineInstanceMigration
	// VMI is the VMI it migrates; nil when there is none.
	VMI *virtv1.VirtualMachineInstance
	// Target is the migration's target pod; nil when there is none.
	Target *corev1.Pod
	// AttachPods are the attachment pods the target pod controls (read
	// while the migration is Scheduled).
	AttachPods []*corev1.Pod
	// Admitted: the parallel limits let one more migration leave the VMI's node.
	Admitted bool
	// Copies are the claims this migration made to copy the VMI's
	// ReadWriteOnce claims into (migrate.CopyForLabel).
	Copies []corev1.PersistentVolumeClaim
	// StateClaim is the backend-storage claim made for the target
	// (backendstorage.FindMigration), nil when there is none; read, as
	// Copies, once the migration is final.
	StateClaim *corev1.PersistentVolumeClaim
	// Now is the time.
	Now time.Time
	// Timeouts bound the steps before the migration runs.
	Timeouts Timeouts
}

// Step is what the controller does next about a migration. Its effects
// happen in the order of the fields.
type Step struct {
	// AddFinalizer adds Finalizer to the migration.
	AddFinalizer bool
	// CopyClaims names the volumes whose ReadWriteOnce claims the
	// migration copies: it creates a copy of each claim, then writes the
	// VMI's status.migratedVolumes and spec.volumes naming the copies.
	CopyClaims []string
	// CreateTarget renders and creates the target pod. For a VMI with
	// backend storage, the pod mounts a claim of the migration's own, made
	// first (labelled backendstorage.LabelMigration).
	CreateTarget bool
	// StartState writes the VMI's status.migrationState anew for this
	// migration: UID, source node and pod, target pod, configuration.
	StartState bool
	// TargetNode records the target pod's node in the VMI's migrationState.
	TargetNode string
	// CreateAttachPods names the hotplugged volumes whose attachment pods
	// the target pod needs (controllers/vmi.CreateAttachPod).
	CreateAttachPods []string
	// RequestAbort sets abortRequested on the VMI's migrationState: the
	// source's handler aborts the running migration.
	RequestAbort bool
	// FailState ends the VMI's migrationState as failed, with this reason:
	// the migration ended before the source's handler started it.
	FailState string
	// DeleteTarget deletes the target pod.
	DeleteTarget bool
	// Phase is the migration's next phase ("" keeps it); Reason says why a
	// migration failed.
	Phase  virtv1.VirtualMachineInstanceMigrationPhase
	Reason string
	// KeepCopies: the migration succeeded; the VM now names the copies,
	// which lose their marks and their owner.
	KeepCopies bool
	// DropCopies: the migration failed; the VMI names its own claims
	// again, its migratedVolumes are cleared and the copies deleted.
	DropCopies bool
	// HandOffState: the migration succeeded; the claim made for its target
	// becomes the VM's backend-storage claim, and the source's is deleted.
	HandOffState bool
	// DropState: the migration failed; the claim made for its target is
	// deleted.
	DropState bool
	// RemoveFinalizer removes Finalizer: nothing of the migration is left to settle.
	RemoveFinalizer bool
	// Wait is when to look again without an event (zero: on events only).
	Wait time.Duration
}

// waitForSlot is how soon a migration held back by the parallel limits
// looks again.
const waitForSlot = time.Second

// inFlight reports whether a migration in phase p holds one of the
// parallel slots.
func inFlight(p virtv1.VirtualMachineInstanceMigrationPhase) bool {
	switch p {
	case virtv1.MigrationScheduling, virtv1.MigrationScheduled, virtv1.MigrationPreparingTarget,
		virtv1.MigrationTargetReady, virtv1.MigrationRunning:
		return true
	}
	return false
}

// StateOf is the VMI's migrationState when it is this migration's, else nil.
func StateOf(vmi *virtv1.VirtualMachineInstance, mig *virtv1.VirtualMachineInstanceMigration) *virtv1.VirtualMachineInstanceMigrationState {
	if vmi == nil || vmi.Status.MigrationState == nil || vmi.Status.MigrationState.MigrationUID != mig.UID {
		return nil
	}
	return vmi.Status.MigrationState
}

// Decide returns the next step of a migration. It is pure: the phases move
// as KubeVirt's do, from what the VMI's migrationState says (the handlers
// write it) and what the target pod does:
//
//	Pending          waits for the parallel limits, then creates the target pod -> Scheduling
//	Scheduling       the pod got a node -> Scheduled
//	Scheduled        the pod's launcher is ready, and the attachment pods of
//	                 the guest's hotplugged disks next to it -> PreparingTarget
//	                 (the target's handler prepares)
//	PreparingTarget  migrationState.targetNodeAddress set by the target's handler -> TargetReady
//	TargetReady      migrationState.startTimestamp set by the source's handler -> Running
//	Running          migrationState completed -> Succeeded, or failed -> Failed
//
// A migration of a VMI that is not live-migratable only because of its
// ReadWriteOnce claims copies them first (CopyClaims, once admitted), and
// keeps or drops the copies when it ends (KeepCopies, DropCopies). The
// backend-storage claim made for the target of a VMI that keeps EFI or
// vTPM state becomes the VM's when the migration succeeds (HandOffState)
// and goes when it fails (DropState).
//
// A migration fails when its VMI is gone, final or not running, cannot
// migrate (LiveMigratable false for another reason), or its target pod is unschedulable for
// Timeouts.Unschedulable, not Ready within Timeouts.Pending of its creation,
// ends or vanishes before the source started, or when a handler does not
// take its step (PreparingTarget, TargetReady) within Timeouts.Handler of
// the phase's start; a failed migration's target pod is deleted. A deleted migration that runs is
// aborted first (abortRequested), then settled like a failed one.
func Decide(o Observed) Step {
	mig, vmi, target := o.Migration, o.VMI, o.Target
	ms := StateOf(vmi, mig)
	var s Step
	deleting := mig.DeletionTimestamp != nil
	if !deleting && !mig.IsFinal() && !controllerutil.ContainsFinalizer(mig, Finalizer) {
		s.AddFinalizer = true
	}
	succeeded := ms != nil && ms.Completed && !ms.Failed
	fail := func(reason string) Step {
		s.Phase, s.Reason = virtv1.MigrationFailed, reason
		if ms != nil && !ms.Completed {
			s.FailState = reason
		}
		s.DeleteTarget = target != nil
		return s
	}

	if mig.IsFinal() {
		s.DeleteTarget = mig.Status.Phase == virtv1.MigrationFailed && target != nil && target.DeletionTimestamp == nil
		s.KeepCopies = mig.Status.Phase == virtv1.MigrationSucceeded && len(o.Copies) > 0
		s.DropCopies = mig.Status.Phase == virtv1.MigrationFailed && (len(o.Copies) > 0 || copiesIn(vmi, mig))
		if controllerutil.ContainsFinalizer(mig, Finalizer) {
			ms := mig.Status.MigrationState
			s.HandOffState = mig.Status.Phase == virtv1.MigrationSucceeded && ms != nil && ms.TargetPersistentStatePVCName != ""
			s.DropState = mig.Status.Phase == virtv1.MigrationFailed && o.StateClaim != nil
		}
		// A target pod being deleted settles it: its node ends it.
		s.RemoveFinalizer = controllerutil.ContainsFinalizer(mig, Finalizer) &&
			(mig.Status.Phase == virtv1.MigrationSucceeded || target == nil || target.DeletionTimestamp != nil)
		return s
	}
	switch {
	case succeeded:
		s.Phase = virtv1.MigrationSucceeded
		return s
	case ms != nil && ms.Failed:
		s.Phase, s.Reason = virtv1.MigrationFailed, ms.FailureReason
		s.DeleteTarget = target != nil
		return s
	}
	if deleting {
		if ms != nil && ms.StartTimestamp != nil {
			// The source's handler runs it: only it can abort it.
			s.RequestAbort = !ms.AbortRequested
			return s
		}
		return fail("the migration was cancelled (deleted) before it started")
	}
	if mig.Status.Phase == virtv1.MigrationPhaseUnset {
		s.Phase = virtv1.MigrationPending
		return s
	}
	switch {
	case vmi == nil:
		return fail(fmt.Sprintf("VirtualMachineInstance %s/%s does not exist", mig.Namespace, mig.Spec.VMIName))
	case vmi.DeletionTimestamp != nil || vmi.IsFinal():
		return fail(fmt.Sprintf("VirtualMachineInstance %s/%s is ending (phase %s)", vmi.Namespace, vmi.Name, vmi.Status.Phase))
	}

	if mig.Status.Phase == virtv1.MigrationPending {
		if vmi.Status.Phase != virtv1.Running {
			return fail(fmt.Sprintf("VirtualMachineInstance %s/%s is not running (phase %s)", vmi.Namespace, vmi.Name, vmi.Status.Phase))
		}
		// A volume migration, or this migration's copies, copy the disks
		// that make a VMI not migratable (the VM controller refused a volume
		// migration that leaves such a disk behind); the handler may not
		// have said so yet. Without either, ReadWriteOnce claims are copied.
		var copyVolumes []string
		if c := conditions.VMI().Find(vmi.Status.Conditions, virtv1.VirtualMachineInstanceIsMigratable); c != nil && c.Status == corev1.ConditionFalse {
			disks := c.Reason == virtv1.VirtualMachineInstanceReasonDisksNotMigratable
			vols, copyable := migrate.ClaimsToCopy(vmi)
			switch {
			case disks && len(vmi.Status.MigratedVolumes) > 0:
			case disks && copyable:
				copyVolumes = vols
			default:
				return fail(fmt.Sprintf("VirtualMachineInstance %s/%s is not live-migratable: %s: %s", vmi.Namespace, vmi.Name, c.Reason, c.Message))
			}
		}
		if copiesIn(vmi, mig) && !migrate.VolumesReady(vmi) {
			// This migration listed its copies and did not get to name
			// them in the spec (a conflict): again.
			copyVolumes = nil
			for _, m := range vmi.Status.MigratedVolumes {
				copyVolumes = append(copyVolumes, m.VolumeName)
			}
		}
		if !migrate.VolumesReady(vmi) && len(copyVolumes) == 0 {
			// The VM controller is between the two writes of a volume
			// migration: the target pod must mount the new claims.
			s.Wait = waitForSlot
			return s
		}
		if other := vmi.Status.MigrationState; other != nil && other.MigrationUID != mig.UID && !other.Completed {
			s.Wait = waitForSlot // one migration of a VMI at a time
			return s
		}
		if !o.Admitted && target == nil {
			s.Wait = waitForSlot
			return s
		}
		if len(copyVolumes) > 0 && target == nil {
			s.CopyClaims = copyVolumes
			s.Wait = waitForSlot
			return s
		}
		s.CreateTarget = target == nil
		s.StartState = true
		s.Phase = virtv1.MigrationScheduling
		return s
	}

	// In flight: the VMI's migrationState is this migration's.
	if ms == nil {
		return fail(fmt.Sprintf("VirtualMachineInstance %s/%s no longer records this migration", vmi.Namespace, vmi.Name))
	}
	if target == nil || target.DeletionTimestamp != nil || podEnded(target) {
		if ms.StartTimestamp != nil {
			return s // the source's handler sees the migration fail and says so
		}
		what := "vanished"
		if target != nil {
			what = fmt.Sprintf("ended (%s)", podEndReason(target))
		}
		name := ms.TargetPod
		if target != nil {
			name = target.Name
		}
		return fail(fmt.Sprintf("the target pod %s %s before the migration started", name, what))
	}
	t := o.Timeouts.withDefaults()
	// waitFor waits until the deadline since plus limit, then fails with why.
	waitFor := func(since time.Time, limit time.Duration, why string) Step {
		if left := since.Add(limit).Sub(o.Now); left > 0 {
			s.Wait = left
			return s
		}
		return fail(why)
	}
	switch mig.Status.Phase {
	case virtv1.MigrationScheduling:
		if target.Spec.NodeName != "" {
			s.TargetNode, s.Phase = target.Spec.NodeName, virtv1.MigrationScheduled
			return s
		}
		if c := conditions.Pod().Find(target.Status.Conditions, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return waitFor(target.CreationTimestamp.Time, t.Unschedulable,
				fmt.Sprintf("the target pod %s stayed unschedulable for %s: %s", target.Name, t.Unschedulable, c.Message))
		}
		return waitFor(target.CreationTimestamp.Time, t.Pending,
			fmt.Sprintf("the target pod %s got no node within %s", target.Name, t.Pending))
	case virtv1.MigrationScheduled:
		if ms.TargetNode == "" {
			s.TargetNode = target.Spec.NodeName
		}
		missing, waiting, ended := attachPodsOf(vmi, o.AttachPods)
		if ended != nil {
			what := "was deleted"
			if podEnded(ended) {
				what = fmt.Sprintf("ended (%s)", podEndReason(ended))
			}
			return fail(fmt.Sprintf("the attachment pod %s of volume %s on the target %s before the migration started",
				ended.Name, vmictl.AttachedVolume(ended), what))
		}
		s.CreateAttachPods = missing
		up := vmictl.LauncherUp(target)
		if up && len(missing) == 0 && len(waiting) == 0 {
			s.Phase = virtv1.MigrationPreparingTarget
			return s
		}
		why := fmt.Sprintf("the target pod %s on node %s was not Ready within %s", target.Name, target.Spec.NodeName, t.Pending)
		if up {
			why = fmt.Sprintf("the attachment pods of volumes %s on node %s were not Ready within %s",
				strings.Join(append(missing, waiting...), ", "), target.Spec.NodeName, t.Pending)
		}
		return waitFor(target.CreationTimestamp.Time, t.Pending, why)
	case virtv1.MigrationPreparingTarget:
		if ms.TargetNodeAddress != "" {
			s.Phase = virtv1.MigrationTargetReady
			return s
		}
		return waitFor(phaseSince(mig), t.Handler,
			fmt.Sprintf("the handler of the target node %s did not prepare the target within %s", ms.TargetNode, t.Handler))
	case virtv1.MigrationTargetReady:
		if ms.StartTimestamp != nil {
			s.Phase = virtv1.MigrationRunning
			return s
		}
		return waitFor(phaseSince(mig), t.Handler,
			fmt.Sprintf("the handler of the source node %s did not start the migration within %s", ms.SourceNode, t.Handler))
	}
	return s
}

// attachPodsOf sorts the hotplugged disks the guest has attached
// (vmictl.AttachedHotplug) by their attachment pods next to the target
// (have): missing (none yet), waiting (not Ready yet); ended is one that
// ended or is being deleted.
func attachPodsOf(vmi *virtv1.VirtualMachineInstance, have []*corev1.Pod) (missing, waiting []string, ended *corev1.Pod) {
	by := map[string]*corev1.Pod{}
	for _, p := range have {
		by[vmictl.AttachedVolume(p)] = p
	}
	for _, vol := range vmictl.AttachedHotplug(vmi) {
		p := by[vol]
		switch {
		case p == nil:
			missing = append(missing, vol)
		case podEnded(p) || p.DeletionTimestamp != nil:
			return nil, nil, p
		case !conditions.Pod().IsTrue(p.Status.Conditions, corev1.PodReady):
			waiting = append(waiting, vol)
		}
	}
	return missing, waiting, nil
}

// copiesIn reports whether vmi's status.migratedVolumes names copies mig
// made (their names say so; the copies may be gone already).
func copiesIn(vmi *virtv1.VirtualMachineInstance, mig *virtv1.VirtualMachineInstanceMigration) bool {
	if vmi == nil {
		return false
	}
	for _, m := range vmi.Status.MigratedVolumes {
		if m.SourcePVCInfo != nil && m.DestinationPVCInfo != nil &&
			m.DestinationPVCInfo.ClaimName == migrate.CopyName(m.SourcePVCInfo.ClaimName, string(mig.UID)) {
			return true
		}
	}
	return false
}

// phaseSince is when the migration entered its phase, as its status
// records (its creation when it does not).
func phaseSince(mig *virtv1.VirtualMachineInstanceMigration) time.Time {
	ts := mig.Status.PhaseTransitionTimestamps
	for i := len(ts) - 1; i >= 0; i-- {
		if ts[i].Phase == mig.Status.Phase {
			return ts[i].PhaseTransitionTimestamp.Time
		}
	}
	return mig.CreationTimestamp.Time
}

func podEnded(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

func podEndReason(pod *corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			if t.Message != "" {
				return fmt.Sprintf("exit code %d: %s", t.ExitCode, t.Message)
			}
			return fmt.Sprintf("exit code %d", t.ExitCode)
		}
	}
	if pod.Status.Reason != "" {
		return pod.Status.Reason + ": " + pod.Status.Message
	}
	return "phase " + string(pod.Status.Phase)
}
