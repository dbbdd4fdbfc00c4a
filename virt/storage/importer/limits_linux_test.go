//go:build linux

package importer

import (
	"context"
	"strings"
	"testing"
)

// TestExecRunnerLimits: a program run with Limits has them (read back by
// the shell once it runs), and one run without has none of ours.
func TestExecRunnerLimits(t *testing.T) {
	script := Command{Path: "/bin/sh", Args: []string{"-c", "sleep 0.3; ulimit -v; ulimit -t"}}
	limited := script
	limited.Limits = &Limits{AddressSpace: 512 << 20, CPUSeconds: 7}
	out, err := ExecRunner{}.Run(context.Background(), limited)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(out)); len(got) != 2 || got[0] != "524288" || got[1] != "7" {
		t.Errorf("limits read back %q, want 524288 KiB of address space and 7 s of CPU", out)
	}
	out, err = ExecRunner{}.Run(context.Background(), script)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "524288") {
		t.Errorf("limits without Limits: %q", out)
	}
}
