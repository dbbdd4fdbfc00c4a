// Package clusterconfig is the one place that finds the cluster's KubeVirt
// CR (kubevirt.io/v1 KubeVirt), whose spec.configuration every virtkit
// daemon and controller honours: [Get] reads it from its namespace, and
// [Namespace] says which namespace that is when a caller names none
// ([DefaultNamespace], "kubevirt", as in KubeVirt's install).
//
// A cluster holds at most one KubeVirt CR: KubeVirt honours a single
// installation, and so does virtkit. Get returns no CR (nil) when there is
// none, and [ErrSeveral] when there is more than one, for every caller alike.
//
// It reads; it never writes the CR. What each consumer takes from the CR
// (the controllers' launcher settings, the migration configuration, the
// eviction strategy) is that consumer's, except for the readings several
// consumers share: [UseEmulation], [Migrations], and [RotationOf], the
// certificates' lives, which the operator issues the installation's
// certificates with and virt-controller the export servers'.
// It builds on every GOOS and needs no cgo.
package clusterconfig
