package cdiconfig

import (
	"slices"

	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
)

// HonorWaitForFirstConsumer is CDI's feature gate (in a CDIConfig's
// spec.featureGates) under which a DataVolume whose claim binds on first
// consumer waits, in phase WaitForFirstConsumer, for a workload's pod to
// bind it before any importer, upload or clone pod runs, so that the claim
// lands on the workload's node.
const HonorWaitForFirstConsumer = "HonorWaitForFirstConsumer"

// DefaultFeatureGates are the feature gates of a CDIConfig virtkit makes:
// those CDI's released CDI resource enables.
func DefaultFeatureGates() []string { return []string{HonorWaitForFirstConsumer} }

// HonorsWaitForFirstConsumer says whether cfg enables
// HonorWaitForFirstConsumer. A nil cfg (none made yet) is read as the
// one virtkit makes, which does.
func HonorsWaitForFirstConsumer(cfg *cdiv1.CDIConfig) bool {
	if cfg == nil {
		return slices.Contains(DefaultFeatureGates(), HonorWaitForFirstConsumer)
	}
	return slices.Contains(cfg.Spec.FeatureGates, HonorWaitForFirstConsumer)
}
