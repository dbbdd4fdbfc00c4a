//go:build tools

// Package tools pins the CSI sidecars that `make csi-bins` builds from this
// module (csi-provisioner and csi-resizer, which share Kubernetes v0.33
// libraries), so that `go mod tidy` keeps their dependencies.
package tools

import (
	_ "github.com/kubernetes-csi/external-provisioner/v5/cmd/csi-provisioner"
	_ "github.com/kubernetes-csi/external-resizer/cmd/csi-resizer"
)
