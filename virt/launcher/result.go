package launcher

import "fmt"

// Result is how a launcher ended: the process exit code and why.
type Result struct {
	// Code is 0 when the guest shut down cleanly, was stopped on request or
	// migrated away, and non-zero otherwise (see the Exit* constants).
	Code int `json:"code"`
	// Reason says in a few words what ended the launcher.
	Reason string `json:"reason"`
}

// Exit codes of a launcher.
const (
	ExitOK = 0
	// ExitGuestCrashed: QEMU died or the guest crashed.
	ExitGuestCrashed = 2
	// ExitGuestDestroyed: something other than this launcher destroyed the domain.
	ExitGuestDestroyed = 3
	// ExitLibvirtdDied: the private libvirtd ended under the launcher.
	ExitLibvirtdDied = 4
	// ExitSetupFailed: the launcher could not start (libvirtd, folders).
	ExitSetupFailed = 5
)

func (r Result) String() string { return fmt.Sprintf("exit %d: %s", r.Code, r.Reason) }
