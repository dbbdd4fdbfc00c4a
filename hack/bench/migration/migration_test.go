package main

import (
	"testing"
	"time"

	"github.com/virtkit/virtkit/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestMigrationBench is the benchmark in CI, small: one migration of a
// 256 MiB guest each way, and one with a 64 MiB data disk copied, failing
// unless both kinds report times and downtimes.
func TestMigrationBench(t *testing.T) {
	testenv.Integration(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	sum, err := run(options{sizes: []uint{256}, blockMiB: 64, runs: 1, repo: root, timeout: 8 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if sum.ratio <= 0 || sum.downtimeMS <= 0 || sum.plainDowntimeMS <= 0 || sum.blockRatio <= 0 {
		t.Errorf("summary %s: want both ratios and both downtimes", sum)
	}
}
