package smoke

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/virtkit/virtkit/internal/testenv"
)

// What `make boot-guest` runs boots the guest, shows its console, shuts it down
// through ACPI and exits cleanly.
func TestBootGuestProgram(t *testing.T) {
	testenv.Integration(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := testenv.Dir(t)
	bin := filepath.Join(dir, "bootguest")
	if b, err := exec.Command("go", "build", "-o", bin, filepath.Join(root, "hack", "bootguest")).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-until-ready", "-repo", root, "-dir", filepath.Join(dir, "run"))
	cmd.Env = append(os.Environ(), testenv.OwnerEnv+"="+strconv.Itoa(os.Getpid()))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bootguest: %v\n%s", err, out)
	}
	for _, want := range []string{
		"guest| VIRTKIT-GUEST-BOOTED kernel=",
		"guest| VIRTKIT-READY",
		"==> guest ready",
		"guest| VIRTKIT-POWEROFF",
		"==> guest powered off",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
