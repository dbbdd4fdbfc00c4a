package vmi_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

func TestLauncherExitReason(t *testing.T) {
	for _, tc := range []struct {
		code int
		want string
	}{
		{contract.ExitOK, vmi.ReasonPodCompleted},
		{contract.ExitGuestCrashed, vmi.ReasonGuestCrashed},
		{contract.ExitGuestDestroyed, vmi.ReasonGuestDestroyed},
		{contract.ExitLibvirtdDied, vmi.ReasonLibvirtdDied},
		{contract.ExitSetupFailed, vmi.ReasonLauncherSetupFailed},
		{1, vmi.ReasonPodFailed},   // a Go panic, flag parsing of an older launcher
		{137, vmi.ReasonPodFailed}, // SIGKILL (out of memory)
	} {
		if d := cmp.Diff(tc.want, vmi.LauncherExitReason(tc.code)); d != "" {
			t.Errorf("exit code %d (-want +got):\n%s", tc.code, d)
		}
	}
}
