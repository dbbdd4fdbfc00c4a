// Package backendstorage is KubeVirt's backend storage as plain functions:
// which VMs keep state outside their disks (persistent EFI variables,
// a persistent vTPM: Needed), the one claim per VM that holds it (Claim,
// named and labelled as KubeVirt's, found again by Find), the storage
// class and access mode it gets (Class, AccessMode), where in the claim
// each kind of state lives (the SubPath constants), which the launcher pod
// mounts, and the claim a live migration's target gets and hands over
// when it succeeds (ForMigration, FindMigration, Handoff).
//
// The VMI controller (controllers/vmi) makes the claim and renders the
// launcher pod with it; the claim is owned by the VM, so it goes with the
// VM and outlives its VMIs. The migration controller (controllers/migration)
// makes the targets' claims. It builds without cgo on any GOOS. See
// docs/backend-storage.md.
package backendstorage
