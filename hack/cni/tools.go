//go:build tools

// Package tools pins the CNI plugins that `make cni-bins` builds (bridge,
// host-local IPAM and loopback: what a local node's pod network needs), so
// that `go mod tidy` keeps their dependencies.
package tools

import (
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/loopback"
)
