package launcher

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// Result is how a launcher ended: the process exit code and why.
type Result struct {
	// Code is 0 when the guest shut down cleanly, was stopped on request or
	// migrated away, and non-zero otherwise (see the Exit* constants).
	Code int `json:"code"`
	// Reason says in a few words what ended the launcher.
	Reason string `json:"reason"`
}

// Exit codes of a launcher; their values are virt/launcher/contract's.
const (
	ExitOK = contract.ExitOK
	// ExitGuestCrashed: QEMU died or the guest crashed.
	ExitGuestCrashed = contract.ExitGuestCrashed
	// ExitGuestDestroyed: something other than this launcher destroyed the domain.
	ExitGuestDestroyed = contract.ExitGuestDestroyed
	// ExitLibvirtdDied: the private libvirtd ended under the launcher.
	ExitLibvirtdDied = contract.ExitLibvirtdDied
	// ExitSetupFailed: the launcher could not start (libvirtd, folders).
	ExitSetupFailed = contract.ExitSetupFailed
)

func (r Result) String() string { return fmt.Sprintf("exit %d: %s", r.Code, r.Reason) }

// ReadResult reads the Result a launcher recorded in l.ExitFile(), from
// the node's side (Folder.Result). ended is false, with no error, while the
// file (or the folder) does not exist: the launcher has not ended (or
// never started).
func ReadResult(l Layout) (r Result, ended bool, err error) {
	f, err := OpenFolder(l)
	if errors.Is(err, fs.ErrNotExist) {
		return Result{}, false, nil
	}
	if err != nil {
		return Result{}, false, err
	}
	defer f.Close()
	return f.Result()
}
