package main

import (
	"testing"
	"time"

	"github.com/virtkit/virtkit/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestScaleOnHollowNodes is the benchmark in CI at a small size: 30 VMIs on
// three hollow nodes, all Running, within the write goal (at most 2 per
// VMI), and gone again after their deletion.
func TestScaleOnHollowNodes(t *testing.T) {
	testenv.Integration(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	const n = 30
	sum, err := run(options{sizes: []int{n}, nodes: 3, rate: 10, repo: root, maxWrites: 2, timeout: 8 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if sum.vmis != n || sum.p95 <= 0 || sum.cpuMs <= 0 || sum.growthCPU != 1 {
		t.Errorf("summary %s: want %d VMIs, a p95, some CPU and growth 1 for one run", sum, n)
	}
}

func TestParseSizes(t *testing.T) {
	if got, err := parseSizes("100, 300,1000"); err != nil || len(got) != 3 || got[2] != 1000 {
		t.Errorf("parseSizes: %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "300,100", "a"} {
		if _, err := parseSizes(bad); err == nil {
			t.Errorf("parseSizes(%q): no error", bad)
		}
	}
}
