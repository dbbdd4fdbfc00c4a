package hostfacts_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/hostfacts"
)

func TestRead(t *testing.T) {
	node := fstest.MapFS{
		"proc/42/status":                                           {Data: []byte("Name:\tlibvirtd\nCpus_allowed:\t0c\nCpus_allowed_list:\t2-3\nMems_allowed_list:\t0\n")},
		"sys/devices/system/node/node1/cpulist":                    {Data: []byte("4-7\n")},
		"sys/devices/system/node/node0/cpulist":                    {Data: []byte("0-3\n")},
		"sys/devices/system/node/possible":                         {Data: []byte("0-1\n")},
		"sys/devices/system/node/node2/cpulist":                    {Data: []byte("\n")}, // a memory-only cell
		"sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages": {Data: []byte("0\n")},
		"sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages":    {Data: []byte("16\n")},
	}
	got, err := hostfacts.Read(node, 42)
	if err != nil {
		t.Fatal(err)
	}
	want := hostfacts.Facts{
		CPU: domain.HostCPU{DedicatedCPUs: []int{2, 3},
			NUMACells: []domain.NUMACell{{ID: 0, CPUs: []int{0, 1, 2, 3}}, {ID: 1, CPUs: []int{4, 5, 6, 7}}}},
		HugepageSizes: []string{"2Mi", "1Gi"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Read (-want +got):\n%s", d)
	}
}

// What the node does not say is unknown, not an error.
func TestReadMissing(t *testing.T) {
	got, err := hostfacts.Read(fstest.MapFS{}, 42)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(hostfacts.Facts{}, got); d != "" {
		t.Errorf("Read of an empty tree (-want +got):\n%s", d)
	}
}

func TestReadRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		node fstest.MapFS
		want string
	}{
		{"bad cpuset", fstest.MapFS{"proc/42/status": {Data: []byte("Cpus_allowed_list:\t3-1\n")}},
			"/proc/42/status: Cpus_allowed_list: cpu list \"3-1\": range 3-1 ends before it starts"},
		{"bad cell", fstest.MapFS{"sys/devices/system/node/node0/cpulist": {Data: []byte("x\n")}},
			"/sys/devices/system/node/node0/cpulist: cpu list \"x\""},
		{"bad hugepage folder", fstest.MapFS{"sys/kernel/mm/hugepages/hugepages-2MB/nr_hugepages": {Data: []byte("0")}},
			"/sys/kernel/mm/hugepages/hugepages-2MB: not a hugepage size"},
		{"huge file", fstest.MapFS{"proc/42/status": {Data: []byte(strings.Repeat("x", 70<<10))}},
			"/proc/42/status: longer than 65536 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := hostfacts.Read(tc.node, 42)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Read = %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  bool
	}{
		{"", nil, false},
		{"0", []int{0}, false},
		{"0-2,8,10-11", []int{0, 1, 2, 8, 10, 11}, false},
		{"3,1-2,2", []int{1, 2, 3}, false},
		{"0-4000000000", nil, true},
		{"-1", nil, true},
		{"a-b", nil, true},
		{"1,,2", nil, true},
	} {
		got, err := hostfacts.ParseCPUList(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("ParseCPUList(%q) error = %v, want error %v", tc.in, err, tc.err)
			continue
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("ParseCPUList(%q) (-want +got):\n%s", tc.in, d)
		}
	}
}
