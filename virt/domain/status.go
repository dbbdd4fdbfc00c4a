package domain

import (
	k8sv1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

// DomainState is what libvirt reports about a domain's life: its State and
// the Reason for it (virDomainGetState). The numeric values are libvirt's.
type DomainState struct {
	State  State
	Reason Reason
}

// VMIStatus is the part of a VMI's status that follows from its domain.
type VMIStatus struct {
	// Phase is the VMI phase.
	Phase virtv1.VirtualMachineInstancePhase
	// Reason is KubeVirt's name for the domain's state-change reason
	// ("Booted", "Destroyed", "User", ...), as virt-handler logs and
	// events spell it; empty when there is no domain.
	Reason string
	// Conditions holds Ready, and Paused when the domain is paused by the
	// user, by an IO error or by the migration monitor. A running,
	// unpaused VMI with a readiness probe has no Ready here: the probe
	// says, through the launcher pod's readiness (controllers/vmi). LastProbeTime and
	// LastTransitionTime are left zero: the caller stamps them when it
	// merges the conditions into the VMI.
	Conditions []virtv1.VirtualMachineInstanceCondition
}

// Condition reasons and messages, as KubeVirt writes them.
const (
	ConditionPausedByUser             = "PausedByUser"
	ConditionPausedIOError            = "PausedIOError"
	ConditionPausedByMigrationMonitor = "PausedByMigrationMonitor"
	// ConditionGuestPaused is the Ready=False reason of a paused domain
	// (KubeVirt reports it through the launcher pod's readiness gate).
	ConditionGuestPaused = "Paused"
)

// Status maps the state of vmi's domain to the VMI's phase and conditions, as
// KubeVirt's virt-handler does. dom is nil when no domain exists (not yet
// defined, or gone).
//
// Without a domain a VMI that was not running yet is Scheduled and one that
// was running has Failed (its domain vanished under it). Whether the launcher
// itself is still alive is the caller's business: KubeVirt fails a Scheduled
// VMI whose launcher stopped answering, and so should the caller.
//
// A domain destroyed (not shut down) counts as Failed when the guest could
// have shut down gracefully, that is when it has ACPI and a termination grace
// period; otherwise it is a normal end, Succeeded.
func Status(vmi *virtv1.VirtualMachineInstance, dom *DomainState) VMIStatus {
	if vmi == nil {
		vmi = &virtv1.VirtualMachineInstance{}
	}
	st := VMIStatus{Phase: phaseOf(vmi, dom)}
	if dom != nil {
		st.Reason = reasonName(dom.State, dom.Reason)
	}
	st.Conditions = conditionsOf(vmi, dom, st.Phase)
	return st
}

func phaseOf(vmi *virtv1.VirtualMachineInstance, dom *DomainState) virtv1.VirtualMachineInstancePhase {
	current := vmi.Status.Phase
	if dom == nil {
		switch {
		case vmi.IsFinal():
			return current
		case vmi.IsRunning():
			return virtv1.Failed
		default:
			return virtv1.Scheduled
		}
	}
	switch dom.State {
	case StateShutoff, StateCrashed:
		switch {
		case dom.State == StateShutoff && dom.Reason == ReasonShutoffCrashed,
			dom.State == StateCrashed && dom.Reason == ReasonCrashedPanicked:
			return virtv1.Failed
		case dom.State != StateShutoff:
			return current
		}
		switch dom.Reason {
		case ReasonShutoffDestroyed:
			if acpiShutdownPossible(vmi) {
				return virtv1.Failed
			}
			if ms := vmi.Status.MigrationState; ms != nil && ms.Failed && ms.Mode == virtv1.MigrationPostCopy {
				// Half the guest's memory was on the other side.
				return virtv1.Failed
			}
			return virtv1.Succeeded
		case ReasonShutoffShutdown, ReasonShutoffSaved, ReasonShutoffFromSnapshot:
			return virtv1.Succeeded
		}
		// Migrated away, or an unknown reason: this node no longer knows.
		return current
	case StatePaused:
		if dom.Reason == ReasonPausedPostcopyFailed {
			return virtv1.Failed
		}
		return virtv1.Running
	case StateRunning, StateBlocked, StatePMSuspended:
		return virtv1.Running
	}
	// Shutting down, or no state: nothing changes yet.
	return current
}

// acpiShutdownPossible says whether the guest was asked to shut down before it
// was destroyed: it has ACPI and a grace period (unset means the default).
func acpiShutdownPossible(vmi *virtv1.VirtualMachineInstance) bool {
	if g := vmi.Spec.TerminationGracePeriodSeconds; g != nil && *g == 0 {
		return false
	}
	f := vmi.Spec.Domain.Features
	return f == nil || f.ACPI.Enabled == nil || *f.ACPI.Enabled
}

func conditionsOf(vmi *virtv1.VirtualMachineInstance, dom *DomainState, phase virtv1.VirtualMachineInstancePhase) []virtv1.VirtualMachineInstanceCondition {
	ready := virtv1.VirtualMachineInstanceCondition{
		Type:    virtv1.VirtualMachineInstanceReady,
		Status:  k8sv1.ConditionFalse,
		Reason:  virtv1.GuestNotRunningReason,
		Message: "Guest VM is not reported as running",
	}
	if dom == nil || phase != virtv1.Running {
		return []virtv1.VirtualMachineInstanceCondition{ready}
	}
	switch dom.State {
	case StateRunning, StateBlocked:
		if vmi.Spec.ReadinessProbe != nil {
			// The guest's readiness is the probe's: the launcher pod's
			// Ready condition, which the VMI controller mirrors.
			return nil
		}
		ready.Status, ready.Reason, ready.Message = k8sv1.ConditionTrue, "", ""
		return []virtv1.VirtualMachineInstanceCondition{ready}
	case StatePaused:
		ready.Reason, ready.Message = ConditionGuestPaused, "the virtual machine is paused"
	}
	conds := []virtv1.VirtualMachineInstanceCondition{ready}
	if dom.State != StatePaused {
		return conds
	}
	paused := virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstancePaused, Status: k8sv1.ConditionTrue}
	switch dom.Reason {
	case ReasonPausedUser:
		paused.Reason, paused.Message = ConditionPausedByUser, "VMI was paused by user"
	case ReasonPausedIOError:
		paused.Reason, paused.Message = ConditionPausedIOError, "VMI was paused, low-level IO error detected"
	case ReasonPausedMigration:
		// QEMU also pauses briefly at the end of every migration; only a
		// pause the migration monitor asked for (paused migration mode) is
		// reported, as in KubeVirt.
		ms := vmi.Status.MigrationState
		if ms == nil || ms.Completed || ms.Mode != virtv1.MigrationPaused {
			return conds
		}
		paused.Reason, paused.Message = ConditionPausedByMigrationMonitor, "VMI was paused by the migration monitor"
	default:
		return conds
	}
	return append(conds, paused)
}

// kubevirtReasons are KubeVirt's names for libvirt's reasons, per state.
var kubevirtReasons = map[State][]string{
	StateRunning:  {"Unknown", "Booted", "Migrated", "Restored", "FromSnapshot", "Unpaused", "MigrationCanceled", "SaveCanceled", "Wakeup", "Crashed", "Postcopy", "PostcopyFailed"},
	StatePaused:   {"Unknown", "User", "Migration", "Save", "Dump", "IOError", "Watchdog", "FromSnapshot", "ShuttingDown", "Snapshot", "Crashed", "StartingUp", "Postcopy", "PostcopyFailed"},
	StateShutdown: {"Unknown", "User"},
	StateShutoff:  {"Unknown", "Shutdown", "Destroyed", "Crashed", "Migrated", "Saved", "Failed", "FromSnapshot", "Daemon"},
	StateCrashed:  {"Unknown", "Panicked"},
}

func reasonName(s State, r Reason) string {
	names := kubevirtReasons[s]
	if r >= 0 && int(r) < len(names) {
		return names[r]
	}
	return "Unknown"
}
