package testenv

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// CNIPlugins returns the folder of the CNI plugins a local node uses
// (bridge, host-local, loopback), building them with hack/cni/build.sh
// (`make cni-bins`) when they are missing or out of date.
func CNIPlugins(t testing.TB) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := Output(t, "cni", "bin")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "cni", "build.sh"), out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testenv: building the CNI plugins (make cni-bins): %v\n%s", err, b)
	}
	return out
}
