package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// exitingGuest answers guest-exec with a process that has already ended
// with status.
type exitingGuest string

func (g exitingGuest) GuestAgentCommand(_ context.Context, _, command string, _ time.Duration) (string, error) {
	if strings.Contains(command, `"guest-exec"`) {
		return `{"return":{"pid":7}}`, nil
	}
	return `{"return":{"exited":true,` + string(g) + `}}`, nil
}

func TestGuestExec(t *testing.T) {
	ctx := context.Background()
	for status, wantErr := range map[string]string{
		`"exitcode":0`: "",
		`"exitcode":1`: "/bin/cat in the guest exited with 1",
		`"signal":15`:  "/bin/cat in the guest was killed by signal 15",
	} {
		err := guestExec(ctx, exitingGuest(status), "ns_vm", []string{"/bin/cat", "/tmp/ok"})
		if got := errText(err); got != wantErr {
			t.Errorf("guestExec ending with %s: %q, want %q", status, got, wantErr)
		}
	}
}

func TestReadyURI(t *testing.T) {
	dir := t.TempDir()
	if _, err := readyURI(dir); err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Errorf("no ready file: %v, want not ready", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "elsewhere"), []byte("qemu:///system\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("elsewhere", filepath.Join(dir, "ready")); err != nil {
		t.Fatal(err)
	}
	if _, err := readyURI(dir); err == nil {
		t.Error("a ready file that is a symbolic link was followed")
	}
	os.Remove(filepath.Join(dir, "ready"))
	if err := os.WriteFile(filepath.Join(dir, "ready"), []byte(strings.Repeat("x", maxReadyFile+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readyURI(dir); err == nil {
		t.Error("an oversized ready file was read")
	}
	if err := os.WriteFile(filepath.Join(dir, "ready"), []byte("qemu+unix:///system?socket=/x/libvirt-sock\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if uri, err := readyURI(dir); err != nil || uri != "qemu+unix:///system?socket=/x/libvirt-sock" {
		t.Errorf("readyURI = %q, %v", uri, err)
	}
}

func TestVMIProbeNeedsACommand(t *testing.T) {
	if err := vmiProbe(context.Background(), t.TempDir(), "ns_vm", time.Second, false, nil); err == nil {
		t.Error("an exec probe without a command passed")
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
