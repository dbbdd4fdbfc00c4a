// Package datasource is the DataSource controller: it reports whether a
// cdi.kubevirt.io/v1beta1 DataSource can be cloned from, as CDI's does, so
// that tools that wait for a golden image's DataSource to be Ready work
// unchanged.
//
// It owns a DataSource's status: status.source (the spec's source) and
// the Ready condition: True (reason Ready) when the claim it names exists,
// is bound and, when a DataVolume of its name fills it, that DataVolume
// has Succeeded, or when the VolumeSnapshot it names is ready to use;
// False otherwise, with the reason (NotFound, NotReady, NotSupported) and
// a message naming the claim or snapshot. It changes nothing else.
// DataVolumes resolve a sourceRef themselves (controllers/datavolume,
// through virt/storage/dvspec.DataSourceSource).
//
// See docs/datavolumes.md.
package datasource
