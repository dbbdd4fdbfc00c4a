//go:build tools

// Package tools pins the developer tools that the Makefile builds into
// _output/tools: controller-gen (CRD schemas from kubevirt.io/api, which it
// reads as source, so that module is required here too) and staticcheck.
package tools

import (
	_ "honnef.co/go/tools/cmd/staticcheck"
	_ "kubevirt.io/api/core/v1"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
