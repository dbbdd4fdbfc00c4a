//go:build tools

// Package tools pins the snapshot components that `make csi-bins` builds from
// this module (the snapshot-controller and the csi-snapshotter sidecar of
// external-snapshotter), so that `go mod tidy` keeps their dependencies.
package tools

import (
	_ "github.com/kubernetes-csi/external-snapshotter/v8/cmd/csi-snapshotter"
	_ "github.com/kubernetes-csi/external-snapshotter/v8/cmd/snapshot-controller"
)
