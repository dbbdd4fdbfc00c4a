package handler

import (
	"fmt"
	"time"

	virtv1 "kubevirt.io/api/core/v1"

	vmictrl "github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/virt/launcher"
)

// Reasons in status.reason (and the Ready condition) of a VMI the handler
// failed. Those that name a launcher exit code are the VMI controller's, so a
// VMI says the same whichever component saw its end first.
const (
	ReasonGuestCrashed        = vmictrl.ReasonGuestCrashed
	ReasonGuestDestroyed      = vmictrl.ReasonGuestDestroyed
	ReasonLibvirtdDied        = vmictrl.ReasonLibvirtdDied
	ReasonLauncherSetupFailed = vmictrl.ReasonLauncherSetupFailed
	ReasonLauncherFailed      = vmictrl.ReasonPodFailed
	// ReasonDomainNotFound: the launcher's libvirt answers but holds no
	// domain for a VMI that was running.
	ReasonDomainNotFound = "DomainNotFound"
	// ReasonLauncherLost: the launcher stopped answering and left no result.
	ReasonLauncherLost = "LauncherLost"
	// ReasonSynchronizationFailed is the Synchronized=False reason of a VMI
	// the handler could not start (the message says why), as KubeVirt
	// writes it.
	ReasonSynchronizationFailed = "Synchronizing with the Domain failed."
)

// LauncherEnding is how a VMI ends when its launcher has ended with r: a
// clean exit (guest shut down, stopped on request, migrated) is Succeeded,
// every other exit code Failed with the reason the VMI controller gives it.
func LauncherEnding(r launcher.Result) Ending {
	e := Ending{Phase: virtv1.Failed, Message: r.Reason}
	if r.Code == launcher.ExitOK {
		e.Phase = virtv1.Succeeded
	} else {
		e.Reason = vmictrl.LauncherExitReason(r.Code)
	}
	if e.Message == "" {
		e.Message = fmt.Sprintf("the launcher exited with code %d", r.Code)
	}
	return e
}

// LostEnding is how a VMI ends whose launcher has not answered since lost
// and left no result, once timeout has passed; nil while it may still come back.
func LostEnding(lost, now time.Time, timeout time.Duration) *Ending {
	if lost.IsZero() || now.Sub(lost) < timeout {
		return nil
	}
	return &Ending{Phase: virtv1.Failed, Reason: ReasonLauncherLost,
		Message: fmt.Sprintf("the launcher's libvirt has not answered for %s and the launcher left no result", timeout)}
}

// ShutdownStep is what to do with a running guest whose VMI is being
// deleted: ask for an ACPI shutdown once (when the grace period allows one),
// wait until the grace period since that request has passed, then destroy.
type ShutdownStep struct {
	// RequestACPI: press the power button now.
	RequestACPI bool
	// Destroy: the grace period is over (or zero): power off at once.
	Destroy bool
	// Wait is how long until the grace period ends.
	Wait time.Duration
}

// NextShutdownStep decides the graceful stop of vmi's guest. requested is
// when the ACPI shutdown was asked for, zero if not yet.
func NextShutdownStep(vmi *virtv1.VirtualMachineInstance, requested, now time.Time) ShutdownStep {
	grace := GracePeriod(vmi)
	if grace == 0 {
		return ShutdownStep{Destroy: true}
	}
	if requested.IsZero() {
		return ShutdownStep{RequestACPI: true, Wait: grace}
	}
	if left := requested.Add(grace).Sub(now); left > 0 {
		return ShutdownStep{Wait: left}
	}
	return ShutdownStep{Destroy: true}
}

// GracePeriod is the time a guest gets to shut down: the VMI's
// terminationGracePeriodSeconds, KubeVirt's 30 s when unset.
func GracePeriod(vmi *virtv1.VirtualMachineInstance) time.Duration {
	if g := vmi.Spec.TerminationGracePeriodSeconds; g != nil {
		if *g < 0 {
			return 0
		}
		return time.Duration(*g) * time.Second
	}
	return vmictrl.DefaultGracePeriod * time.Second
}
