// Command etcd is etcd's own server entry point, built at the version that
// Kubernetes v1.37.2 pins so the test control plane matches a real one.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
