package domain

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	k8sv1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

func TestStatus(t *testing.T) {
	zero := int64(0)
	off := false
	vmiIn := func(phase virtv1.VirtualMachineInstancePhase, edit ...func(*virtv1.VirtualMachineInstance)) *virtv1.VirtualMachineInstance {
		v := &virtv1.VirtualMachineInstance{Status: virtv1.VirtualMachineInstanceStatus{Phase: phase}}
		for _, e := range edit {
			e(v)
		}
		return v
	}
	noGrace := func(v *virtv1.VirtualMachineInstance) { v.Spec.TerminationGracePeriodSeconds = &zero }
	noACPI := func(v *virtv1.VirtualMachineInstance) {
		v.Spec.Domain.Features = &virtv1.Features{ACPI: virtv1.FeatureState{Enabled: &off}}
	}
	migrating := func(mode virtv1.MigrationMode) func(*virtv1.VirtualMachineInstance) {
		return func(v *virtv1.VirtualMachineInstance) {
			v.Status.MigrationState = &virtv1.VirtualMachineInstanceMigrationState{Mode: mode}
		}
	}
	postcopyFailed := func(v *virtv1.VirtualMachineInstance) {
		v.Status.MigrationState = &virtv1.VirtualMachineInstanceMigrationState{Mode: virtv1.MigrationPostCopy, Failed: true}
	}
	probed := func(v *virtv1.VirtualMachineInstance) {
		v.Spec.ReadinessProbe = &virtv1.Probe{Handler: virtv1.Handler{GuestAgentPing: &virtv1.GuestAgentPing{}}}
	}
	ready := virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceReady, Status: k8sv1.ConditionTrue}
	notRunning := virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceReady, Status: k8sv1.ConditionFalse,
		Reason: virtv1.GuestNotRunningReason, Message: "Guest VM is not reported as running"}
	pausedReady := virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceReady, Status: k8sv1.ConditionFalse,
		Reason: ConditionGuestPaused, Message: "the virtual machine is paused"}
	paused := func(reason, msg string) virtv1.VirtualMachineInstanceCondition {
		return virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstancePaused, Status: k8sv1.ConditionTrue, Reason: reason, Message: msg}
	}
	conds := func(c ...virtv1.VirtualMachineInstanceCondition) []virtv1.VirtualMachineInstanceCondition { return c }

	cases := []struct {
		name string
		vmi  *virtv1.VirtualMachineInstance
		dom  *DomainState
		want VMIStatus
	}{
		{"no domain yet", vmiIn(virtv1.Scheduled), nil, VMIStatus{Phase: virtv1.Scheduled, Conditions: conds(notRunning)}},
		{"no domain, scheduling", vmiIn(virtv1.Scheduling), nil, VMIStatus{Phase: virtv1.Scheduled, Conditions: conds(notRunning)}},
		{"domain vanished while running", vmiIn(virtv1.Running), nil, VMIStatus{Phase: virtv1.Failed, Conditions: conds(notRunning)}},
		{"no domain, final", vmiIn(virtv1.Succeeded), nil, VMIStatus{Phase: virtv1.Succeeded, Conditions: conds(notRunning)}},
		{"booted", vmiIn(virtv1.Scheduled), &DomainState{StateRunning, ReasonRunningBooted},
			VMIStatus{Phase: virtv1.Running, Reason: "Booted", Conditions: conds(ready)}},
		{"unpaused", vmiIn(virtv1.Running), &DomainState{StateRunning, ReasonRunningUnpaused},
			VMIStatus{Phase: virtv1.Running, Reason: "Unpaused", Conditions: conds(ready)}},
		{"booted, with a readiness probe: the probe says", vmiIn(virtv1.Scheduled, probed), &DomainState{StateRunning, ReasonRunningBooted},
			VMIStatus{Phase: virtv1.Running, Reason: "Booted"}},
		{"paused, with a readiness probe", vmiIn(virtv1.Running, probed), &DomainState{StatePaused, ReasonPausedUser},
			VMIStatus{Phase: virtv1.Running, Reason: "User", Conditions: conds(pausedReady, paused(ConditionPausedByUser, "VMI was paused by user"))}},
		{"no domain, with a readiness probe", vmiIn(virtv1.Scheduled, probed), nil, VMIStatus{Phase: virtv1.Scheduled, Conditions: conds(notRunning)}},
		{"blocked", vmiIn(virtv1.Running), &DomainState{StateBlocked, ReasonUnknown},
			VMIStatus{Phase: virtv1.Running, Reason: "Unknown", Conditions: conds(ready)}},
		{"pm suspended", vmiIn(virtv1.Running), &DomainState{StatePMSuspended, ReasonUnknown},
			VMIStatus{Phase: virtv1.Running, Reason: "Unknown", Conditions: conds(notRunning)}},
		{"paused by user", vmiIn(virtv1.Running), &DomainState{StatePaused, ReasonPausedUser},
			VMIStatus{Phase: virtv1.Running, Reason: "User", Conditions: conds(pausedReady, paused(ConditionPausedByUser, "VMI was paused by user"))}},
		{"paused on IO error", vmiIn(virtv1.Running), &DomainState{StatePaused, ReasonPausedIOError},
			VMIStatus{Phase: virtv1.Running, Reason: "IOError", Conditions: conds(pausedReady, paused(ConditionPausedIOError, "VMI was paused, low-level IO error detected"))}},
		{"paused by migration monitor", vmiIn(virtv1.Running, migrating(virtv1.MigrationPaused)), &DomainState{StatePaused, ReasonPausedMigration},
			VMIStatus{Phase: virtv1.Running, Reason: "Migration", Conditions: conds(pausedReady, paused(ConditionPausedByMigrationMonitor, "VMI was paused by the migration monitor"))}},
		{"paused at the end of a pre-copy migration", vmiIn(virtv1.Running, migrating(virtv1.MigrationPreCopy)), &DomainState{StatePaused, ReasonPausedMigration},
			VMIStatus{Phase: virtv1.Running, Reason: "Migration", Conditions: conds(pausedReady)}},
		{"paused starting up", vmiIn(virtv1.Scheduled), &DomainState{StatePaused, ReasonPausedStartingUp},
			VMIStatus{Phase: virtv1.Running, Reason: "StartingUp", Conditions: conds(pausedReady)}},
		{"postcopy failed while paused", vmiIn(virtv1.Running), &DomainState{StatePaused, ReasonPausedPostcopyFailed},
			VMIStatus{Phase: virtv1.Failed, Reason: "PostcopyFailed", Conditions: conds(notRunning)}},
		{"guest shut down", vmiIn(virtv1.Running), &DomainState{StateShutoff, ReasonShutoffShutdown},
			VMIStatus{Phase: virtv1.Succeeded, Reason: "Shutdown", Conditions: conds(notRunning)}},
		{"shutting down", vmiIn(virtv1.Running), &DomainState{StateShutdown, ReasonShutdownUser},
			VMIStatus{Phase: virtv1.Running, Reason: "User", Conditions: conds(notRunning)}},
		{"destroyed after the grace period", vmiIn(virtv1.Running), &DomainState{StateShutoff, ReasonShutoffDestroyed},
			VMIStatus{Phase: virtv1.Failed, Reason: "Destroyed", Conditions: conds(notRunning)}},
		{"destroyed without grace period", vmiIn(virtv1.Running, noGrace), &DomainState{StateShutoff, ReasonShutoffDestroyed},
			VMIStatus{Phase: virtv1.Succeeded, Reason: "Destroyed", Conditions: conds(notRunning)}},
		{"destroyed without ACPI", vmiIn(virtv1.Running, noACPI), &DomainState{StateShutoff, ReasonShutoffDestroyed},
			VMIStatus{Phase: virtv1.Succeeded, Reason: "Destroyed", Conditions: conds(notRunning)}},
		{"destroyed after a failed post-copy", vmiIn(virtv1.Running, noGrace, postcopyFailed), &DomainState{StateShutoff, ReasonShutoffDestroyed},
			VMIStatus{Phase: virtv1.Failed, Reason: "Destroyed", Conditions: conds(notRunning)}},
		{"crashed", vmiIn(virtv1.Running), &DomainState{StateShutoff, ReasonShutoffCrashed},
			VMIStatus{Phase: virtv1.Failed, Reason: "Crashed", Conditions: conds(notRunning)}},
		{"panicked", vmiIn(virtv1.Running), &DomainState{StateCrashed, ReasonCrashedPanicked},
			VMIStatus{Phase: virtv1.Failed, Reason: "Panicked", Conditions: conds(notRunning)}},
		{"crashed, unknown reason", vmiIn(virtv1.Running), &DomainState{StateCrashed, ReasonUnknown},
			VMIStatus{Phase: virtv1.Running, Reason: "Unknown", Conditions: conds(notRunning)}},
		{"saved", vmiIn(virtv1.Running), &DomainState{StateShutoff, ReasonShutoffSaved},
			VMIStatus{Phase: virtv1.Succeeded, Reason: "Saved", Conditions: conds(notRunning)}},
		{"from snapshot", vmiIn(virtv1.Running), &DomainState{StateShutoff, ReasonShutoffFromSnapshot},
			VMIStatus{Phase: virtv1.Succeeded, Reason: "FromSnapshot", Conditions: conds(notRunning)}},
		{"migrated away", vmiIn(virtv1.Running), &DomainState{StateShutoff, ReasonShutoffMigrated},
			VMIStatus{Phase: virtv1.Running, Reason: "Migrated", Conditions: conds(ready0())}},
		{"defined, never started", vmiIn(virtv1.Scheduled), &DomainState{StateShutoff, ReasonUnknown},
			VMIStatus{Phase: virtv1.Scheduled, Reason: "Unknown", Conditions: conds(notRunning)}},
		{"no state", vmiIn(virtv1.Scheduled), &DomainState{StateNoState, ReasonUnknown},
			VMIStatus{Phase: virtv1.Scheduled, Reason: "Unknown", Conditions: conds(notRunning)}},
		{"unknown reason number", vmiIn(virtv1.Running), &DomainState{StateRunning, Reason(99)},
			VMIStatus{Phase: virtv1.Running, Reason: "Unknown", Conditions: conds(ready)}},
		{"nil vmi", nil, &DomainState{StateRunning, ReasonRunningBooted},
			VMIStatus{Phase: virtv1.Running, Reason: "Booted", Conditions: conds(ready)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Status(tc.vmi, tc.dom)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Status (-want +got):\n%s", diff)
			}
		})
	}
}

// ready0 is the Ready condition of a VMI whose domain migrated away: the
// phase stays Running, but this node's domain is shut off.
func ready0() virtv1.VirtualMachineInstanceCondition {
	return virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceReady, Status: k8sv1.ConditionFalse,
		Reason: virtv1.GuestNotRunningReason, Message: "Guest VM is not reported as running"}
}
