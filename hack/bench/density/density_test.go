package main

import (
	"context"
	"testing"
	"time"

	"github.com/virtkit/virtkit/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestDensityMeetsTheWriteGoal is the benchmark in CI: three VMIs on a
// fresh virt-local, failing when our components write more than 2 times
// per VMI (KubeVirt v1.8: about 8.4) or the handler's start stages miss a
// start.
func TestDensityMeetsTheWriteGoal(t *testing.T) {
	testenv.Integration(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	sum, err := run(options{n: n, interval: 100 * time.Millisecond, memMiB: 128, repo: root, maxWrites: 2, timeout: 6 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if sum.vmis != n || sum.writesPerVMI <= 0 || sum.p50 <= 0 || sum.p95 < sum.p50 || sum.ratioToPlain <= 0 {
		t.Errorf("summary %s: want %d VMIs, some writes, 0 < p50 <= p95 and a ratio", sum, n)
	}
	if sum.starts != n {
		t.Errorf("the handlers reported %d starts to their stage histogram, want %d", sum.starts, n)
	}
}

// TestSingleStartsAgainstTheFloor runs -single with one counted start on
// each side: the path that measures one VM at a time must keep working.
func TestSingleStartsAgainstTheFloor(t *testing.T) {
	testenv.Integration(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	sum, err := runSingle(ctx, options{single: 1, memMiB: 128, repo: root})
	if err != nil {
		t.Fatal(err)
	}
	if sum.runs != 1 || sum.local.Median <= 0 || sum.floor.Median <= 0 || sum.ratioToPlainOfMedian <= 0 {
		t.Errorf("summary %s: want one run on each side and a ratio", sum)
	}
}
