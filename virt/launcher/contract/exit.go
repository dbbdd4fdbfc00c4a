package contract

// Exit codes of a launcher. Every code not listed here is a launcher that
// failed in some other way (killed, out of memory).
const (
	// ExitOK: the guest shut down cleanly, was stopped on request or
	// migrated away.
	ExitOK = 0
	// ExitGuestCrashed: QEMU died or the guest crashed.
	ExitGuestCrashed = 2
	// ExitGuestDestroyed: something other than the launcher destroyed the domain.
	ExitGuestDestroyed = 3
	// ExitLibvirtdDied: the private libvirtd ended under the launcher.
	ExitLibvirtdDied = 4
	// ExitSetupFailed: the launcher could not start (libvirtd, folders, flags).
	ExitSetupFailed = 5
)

// Exit codes of the launcher's probe modes (FlagGuestAgentPing,
// FlagGuestExec): ExitOK when the guest answered as the probe wants.
const (
	// ExitProbeFailed: the guest did not answer, or its command failed.
	ExitProbeFailed = 1
)
