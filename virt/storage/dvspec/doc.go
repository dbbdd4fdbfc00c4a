// Package dvspec is what a CDI DataVolume's spec means to virtkit, as
// plain functions: which source it names and whether virtkit can read it
// (SourceOf), and the PersistentVolumeClaim it gets (Claim, with CDI's
// size rules), each refusal a *field.Error naming the field. The
// DataVolume controller (controllers/datavolume) and virt-api's admission
// webhook (virtapi/admission) share it, so that a DataVolume refused at
// creation is the one the controller would fail.
//
// It also holds CDI's labels and annotations on the claims and pods it
// fills. It builds without cgo on any GOOS. See docs/datavolumes.md.
package dvspec
