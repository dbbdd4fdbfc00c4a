package main

import (
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
