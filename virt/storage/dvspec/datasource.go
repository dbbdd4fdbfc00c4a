package dvspec

import (
	"errors"
	"fmt"

	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
)

// DataSourceClaim returns the claim a DataSource names (its pvc source,
// the namespace defaulted to the DataSource's), or why virtkit cannot read
// it: a snapshot source, or a DataSource naming another DataSource, is not
// supported yet.
func DataSourceClaim(ds *cdiv1.DataSource) (*cdiv1.DataVolumeSourcePVC, error) {
	src := ds.Spec.Source
	switch {
	case src.PVC != nil:
		c := *src.PVC
		if c.Namespace == "" {
			c.Namespace = ds.Namespace
		}
		if c.Name == "" {
			return nil, fmt.Errorf("DataSource %s/%s: spec.source.pvc.name: required", ds.Namespace, ds.Name)
		}
		return &c, nil
	case src.Snapshot != nil:
		return nil, fmt.Errorf("DataSource %s/%s: spec.source.snapshot: not supported by virtkit yet", ds.Namespace, ds.Name)
	case src.DataSource != nil:
		return nil, fmt.Errorf("DataSource %s/%s: spec.source.dataSource: not supported by virtkit yet", ds.Namespace, ds.Name)
	}
	return nil, errors.New("DataSource " + ds.Namespace + "/" + ds.Name + ": no source")
}
