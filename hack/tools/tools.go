//go:build tools

// Package tools pins the developer tools that the Makefile builds into
// _output/tools: controller-gen (CRD schemas from kubevirt.io/api and the
// VolumeSnapshot types of external-snapshotter's client, which it reads as
// source, so those modules are required here too) and staticcheck.
package tools

import (
	_ "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	_ "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	_ "honnef.co/go/tools/cmd/staticcheck"
	_ "kubevirt.io/api/core/v1"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
