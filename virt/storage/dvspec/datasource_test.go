package dvspec

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
)

func TestDataSourceClaim(t *testing.T) {
	ds := func(src cdiv1.DataSourceSource) *cdiv1.DataSource {
		return &cdiv1.DataSource{ObjectMeta: metav1.ObjectMeta{Namespace: "images", Name: "fedora"}, Spec: cdiv1.DataSourceSpec{Source: src}}
	}
	for _, tc := range []struct {
		name, wantNS, wantName, err string
		ds                          *cdiv1.DataSource
	}{
		{name: "pvc", ds: ds(cdiv1.DataSourceSource{PVC: &cdiv1.DataVolumeSourcePVC{Name: "fedora-41"}}), wantNS: "images", wantName: "fedora-41"},
		{name: "pvc elsewhere", ds: ds(cdiv1.DataSourceSource{PVC: &cdiv1.DataVolumeSourcePVC{Namespace: "golden", Name: "f"}}), wantNS: "golden", wantName: "f"},
		{name: "pvc without a name", ds: ds(cdiv1.DataSourceSource{PVC: &cdiv1.DataVolumeSourcePVC{}}), err: "spec.source.pvc.name: required"},
		{name: "snapshot", ds: ds(cdiv1.DataSourceSource{Snapshot: &cdiv1.DataVolumeSourceSnapshot{Name: "s"}}), err: "spec.source.snapshot: not supported"},
		{name: "chained", ds: ds(cdiv1.DataSourceSource{DataSource: &cdiv1.DataSourceRefSourceDataSource{Name: "other"}}), err: "spec.source.dataSource"},
		{name: "empty", ds: ds(cdiv1.DataSourceSource{}), err: "no source"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := DataSourceClaim(tc.ds)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "images/fedora") {
					t.Fatalf("DataSourceClaim = %+v, %v; want an error naming the DataSource and %q", c, err, tc.err)
				}
				return
			}
			if err != nil || c.Namespace != tc.wantNS || c.Name != tc.wantName {
				t.Fatalf("DataSourceClaim = %+v, %v; want %s/%s", c, err, tc.wantNS, tc.wantName)
			}
		})
	}
}
