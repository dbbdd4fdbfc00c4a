package smoke

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/virtkit/virtkit/internal/testenv"
)

// Two builds of the test guest give byte-identical files, and all of it stays
// under 40 MB.
func TestGuestBuildReproducibleAndSmall(t *testing.T) {
	testenv.Integration(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := testenv.Dir(t)
	var builds [2]string
	for i := range builds {
		builds[i] = filepath.Join(dir, string(rune('a'+i)))
		if b, err := exec.Command("bash", filepath.Join(root, "hack", "guest", "build.sh"), builds[i]).CombinedOutput(); err != nil {
			t.Fatalf("build %d: %v\n%s", i, err, b)
		}
	}
	var total int64
	for _, name := range []string{"vmlinuz", "initramfs.gz", "disk.qcow2", "cmdline"} {
		a, err := os.ReadFile(filepath.Join(builds[0], name))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(builds[1], name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two builds", name)
		}
		total += int64(len(a))
	}
	if total >= 40e6 {
		t.Errorf("the guest's files take %d bytes, want under 40 MB", total)
	}
	t.Logf("guest files: %.1f MB", float64(total)/1e6)
}
