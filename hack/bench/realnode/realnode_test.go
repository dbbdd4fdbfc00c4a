package main

import (
	"context"
	"testing"

	"github.com/virtkit/virtkit/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRealNodeBench is the benchmark in CI, small: one measured start on
// each side after the warm-ups, failing unless every figure is there.
func TestRealNodeBench(t *testing.T) {
	testenv.Integration(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	sum, err := run(context.Background(), options{repo: root, runs: 1, memMiB: 256})
	if err != nil {
		t.Fatal(err)
	}
	if sum.overheadMiB <= 0 || sum.createToRunningS <= 0 || sum.ratio <= 0 {
		t.Errorf("summary %s: want every figure", sum)
	}
}
