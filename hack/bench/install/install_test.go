package main

import (
	"context"
	"testing"
	"time"

	"github.com/virtkit/virtkit/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestInstallBench is the benchmark in CI, with a short idle reading,
// failing unless every figure is there.
func TestInstallBench(t *testing.T) {
	testenv.Integration(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	sum, err := run(context.Background(), options{repo: root, idle: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if sum.installS <= 0 || sum.upgradeS <= 0 || sum.operatorRSSMiB <= 0 {
		t.Errorf("summary %s: want every figure", sum)
	}
}
