package dvspec

import (
	"errors"
	"fmt"

	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/virtkit/virtkit/virt/storage/importer/contract"
)

// DataSourceSource returns what a DataSource names, its namespace
// defaulted to the DataSource's: a claim (Source.Claim) or a
// VolumeSnapshot (Source.Snapshot); or why virtkit cannot read it: a
// DataSource naming another DataSource is not supported yet.
func DataSourceSource(ds *cdiv1.DataSource) (Source, error) {
	src := ds.Spec.Source
	switch {
	case src.PVC != nil:
		c := *src.PVC
		if c.Namespace == "" {
			c.Namespace = ds.Namespace
		}
		if c.Name == "" {
			return Source{}, fmt.Errorf("DataSource %s/%s: spec.source.pvc.name: required", ds.Namespace, ds.Name)
		}
		return Source{Kind: contract.SourceFile, Claim: &c}, nil
	case src.Snapshot != nil:
		snap := *src.Snapshot
		if snap.Namespace == "" {
			snap.Namespace = ds.Namespace
		}
		if snap.Name == "" {
			return Source{}, fmt.Errorf("DataSource %s/%s: spec.source.snapshot.name: required", ds.Namespace, ds.Name)
		}
		return Source{Kind: contract.SourceFile, Snapshot: &snap}, nil
	case src.DataSource != nil:
		return Source{}, fmt.Errorf("DataSource %s/%s: spec.source.dataSource: not supported by virtkit yet", ds.Namespace, ds.Name)
	}
	return Source{}, errors.New("DataSource " + ds.Namespace + "/" + ds.Name + ": no source")
}

// Resolve is src, a sourceRef's, with what its DataSource ds names.
func (src Source) Resolve(ds *cdiv1.DataSource) (Source, error) {
	named, err := DataSourceSource(ds)
	if err != nil {
		return src, err
	}
	src.Claim, src.Snapshot = named.Claim, named.Snapshot
	return src, nil
}
