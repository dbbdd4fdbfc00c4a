package main

import (
	"testing"
	"time"

	"github.com/virtkit/virtkit/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestMigrationBench is the benchmark in CI, small: one migration of a
// 256 MiB guest each way, failing unless both report times and downtimes.
func TestMigrationBench(t *testing.T) {
	testenv.Integration(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	sum, err := run(options{sizes: []uint{256}, runs: 1, repo: root, timeout: 8 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if sum.ratio <= 0 || sum.downtimeMS <= 0 || sum.plainDowntimeMS <= 0 {
		t.Errorf("summary %s: want a ratio and both downtimes", sum)
	}
}
