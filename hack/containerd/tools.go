//go:build tools

// Package tools pins the containerd commands that `make containerd-bins`
// builds (containerd, the runc shim and ctr: the container runtime of a real
// kubelet node), so that `go mod tidy` keeps their dependencies.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
