package vmi

import "github.com/virtkit/virtkit/virt/launcher/contract"

// LauncherExitReason is the VMI reason a launcher's exit code gives
// (virt/launcher/contract): ReasonPodCompleted for a clean exit, one reason
// per failure code, ReasonPodFailed for any other code. The VMI controller
// and the handler both name a launcher's end by it, so a VMI says the same
// whichever of them saw the end first.
func LauncherExitReason(code int) string {
	switch code {
	case contract.ExitOK:
		return ReasonPodCompleted
	case contract.ExitGuestCrashed:
		return ReasonGuestCrashed
	case contract.ExitGuestDestroyed:
		return ReasonGuestDestroyed
	case contract.ExitLibvirtdDied:
		return ReasonLibvirtdDied
	case contract.ExitSetupFailed:
		return ReasonLauncherSetupFailed
	}
	return ReasonPodFailed
}
