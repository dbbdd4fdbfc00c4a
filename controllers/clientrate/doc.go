// Package clientrate rate-limits a component's client of the apiserver as
// the KubeVirt CR says, and follows the CR's changes without a restart, as
// KubeVirt's reloadable rate limiters do.
//
// A [Limiter] is a client-go token bucket whose rate can change while
// clients wait on it; [Configure] makes a rest.Config's clients share one;
// [Follow] re-reads the CR (virt/clusterconfig.ClientRateLimit, which owns
// the fields and KubeVirt's defaults) and sets the rate when it changed.
package clientrate
