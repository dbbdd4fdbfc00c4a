// Package cdiresource is the controller of CDI's install and configuration
// resource, the cluster-scoped cdi.kubevirt.io/v1beta1 CDI, as CDI's
// operator keeps it for the parts virtkit serves.
//
// It keeps one CDI resource in being ([DefaultName] when it makes one,
// with the CDIConfig's spec of the moment as its spec.config) and takes
// configuration authority as CDI's operator does: the active resource
// carries [AnnConfigAuthority], and from then on its spec.config is the
// CDIConfig's spec (an edit made to the CDIConfig directly is put back,
// so users configure through the CDI resource, as CDI's documentation
// says). A resource taken over without spec.config gets the CDIConfig's
// spec first, so nothing configured is lost.
//
// The active resource ([Active]: the oldest not in phase Error) has phase
// Deployed and the conditions Available, Progressing false and Degraded
// false; any other is put in phase Error with Degraded naming the reason,
// as CDI's operator treats a second CDI resource ([NextStatus]).
// [CloneStrategyOverride] is how the DataVolume controller reads
// spec.cloneStrategyOverride, which overrides every StorageProfile's
// clone strategy. The rest of the spec (images, placement, certificates,
// uninstall strategy, priority class) configures CDI's own workloads, which
// virtkit does not have; it is kept and not acted on.
//
// See docs/datavolumes.md.
package cdiresource
