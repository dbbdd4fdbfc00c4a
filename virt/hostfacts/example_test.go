package hostfacts_test

import (
	"fmt"
	"testing/fstest"

	"github.com/virtkit/virtkit/virt/hostfacts"
)

// The facts of a pod whose libvirtd (PID 42) the kubelet pinned to CPUs 2
// and 3, on a node with 2 MiB hugepages. On a node, pass os.DirFS("/").
func ExampleRead() {
	node := fstest.MapFS{
		"proc/42/status": {Data: []byte("Cpus_allowed_list:\t2-3\n")},
		"sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages": {Data: []byte("16\n")},
	}
	f, err := hostfacts.Read(node, 42)
	if err != nil {
		panic(err)
	}
	fmt.Println(f.CPU.DedicatedCPUs, f.HugepageSizes)
	// Output: [2 3] [2Mi]
}
