package launcher_test

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtkit/virtkit/virt/launcher"
	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virt/libvirtd"
)

// Layout's paths are the contract's names under Root: what the pod's
// readiness probe and the handler look for is what the launcher writes.
func TestLayoutFollowsContract(t *testing.T) {
	l := launcher.Layout{Root: "/run/virtkit/uid"}
	for _, tc := range []struct {
		what, got, name string
	}{
		{"LibvirtDir", l.LibvirtDir(), contract.LibvirtDir},
		{"SerialSocket", l.SerialSocket(), contract.SerialSocket},
		{"SerialLog", l.SerialLog(), contract.SerialLog},
		{"VNCSocket", l.VNCSocket(), contract.VNCSocket},
		{"ReadyFile", l.ReadyFile(), contract.ReadyFile},
		{"ExitFile", l.ExitFile(), contract.ExitFile},
	} {
		if d := cmp.Diff(filepath.Join(l.Root, tc.name), tc.got); d != "" {
			t.Errorf("%s (-contract +Layout):\n%s", tc.what, d)
		}
	}
	if d := cmp.Diff(filepath.Join(l.LibvirtDir(), "run", "libvirt-sock"), l.LibvirtSocket()); d != "" {
		t.Errorf("LibvirtSocket (-want +got):\n%s", d)
	}
}

// The exit codes a launcher ends with are the contract's, and distinct.
func TestExitCodesFollowContract(t *testing.T) {
	got := []int{launcher.ExitOK, launcher.ExitGuestCrashed, launcher.ExitGuestDestroyed, launcher.ExitLibvirtdDied, launcher.ExitSetupFailed}
	want := []int{contract.ExitOK, contract.ExitGuestCrashed, contract.ExitGuestDestroyed, contract.ExitLibvirtdDied, contract.ExitSetupFailed}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("exit codes (-contract +launcher):\n%s", d)
	}
	seen := map[int]bool{}
	for _, c := range got {
		if seen[c] {
			t.Errorf("exit code %d used twice", c)
		}
		seen[c] = true
	}
}

// The state folders a launcher pod mounts backend storage over are where
// a session libvirtd with the pod's configuration folder keeps that state.
func TestStateFoldersFollowLibvirt(t *testing.T) {
	p := libvirtd.Config{Dir: "/run/virtkit/uid/libvirt", Session: true, ConfigDir: contract.LibvirtConfigDir}.Paths()
	got := []string{p.Swtpm, p.SwtpmLocalCA, p.NVRAM}
	want := []string{contract.SwtpmDir, contract.SwtpmLocalCADir, contract.NVRAMDir}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-contract +libvirtd):\n%s", d)
	}
}
