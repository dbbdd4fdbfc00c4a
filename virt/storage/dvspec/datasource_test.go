package dvspec

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
)

func TestDataSourceSource(t *testing.T) {
	ds := func(src cdiv1.DataSourceSource) *cdiv1.DataSource {
		return &cdiv1.DataSource{ObjectMeta: metav1.ObjectMeta{Namespace: "images", Name: "fedora"}, Spec: cdiv1.DataSourceSpec{Source: src}}
	}
	for _, tc := range []struct {
		name, wantNS, wantName, err string
		ds                          *cdiv1.DataSource
		snapshot                    bool
	}{
		{name: "pvc", ds: ds(cdiv1.DataSourceSource{PVC: &cdiv1.DataVolumeSourcePVC{Name: "fedora-41"}}), wantNS: "images", wantName: "fedora-41"},
		{name: "pvc elsewhere", ds: ds(cdiv1.DataSourceSource{PVC: &cdiv1.DataVolumeSourcePVC{Namespace: "golden", Name: "f"}}), wantNS: "golden", wantName: "f"},
		{name: "pvc without a name", ds: ds(cdiv1.DataSourceSource{PVC: &cdiv1.DataVolumeSourcePVC{}}), err: "spec.source.pvc.name: required"},
		{name: "snapshot", ds: ds(cdiv1.DataSourceSource{Snapshot: &cdiv1.DataVolumeSourceSnapshot{Name: "s"}}), wantNS: "images", wantName: "s", snapshot: true},
		{name: "snapshot without a name", ds: ds(cdiv1.DataSourceSource{Snapshot: &cdiv1.DataVolumeSourceSnapshot{}}), err: "spec.source.snapshot.name: required"},
		{name: "chained", ds: ds(cdiv1.DataSourceSource{DataSource: &cdiv1.DataSourceRefSourceDataSource{Name: "other"}}), err: "spec.source.dataSource"},
		{name: "empty", ds: ds(cdiv1.DataSourceSource{}), err: "no source"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := DataSourceSource(tc.ds)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "images/fedora") {
					t.Fatalf("DataSourceSource = %+v, %v; want an error naming the DataSource and %q", src, err, tc.err)
				}
				return
			}
			ns, name := "", ""
			switch {
			case src.Claim != nil && !tc.snapshot:
				ns, name = src.Claim.Namespace, src.Claim.Name
			case src.Snapshot != nil && tc.snapshot:
				ns, name = src.Snapshot.Namespace, src.Snapshot.Name
			}
			if err != nil || ns != tc.wantNS || name != tc.wantName || !src.IsClone() {
				t.Fatalf("DataSourceSource = %+v, %v; want %s/%s (snapshot %t)", src, err, tc.wantNS, tc.wantName, tc.snapshot)
			}
		})
	}
}

// TestResolve: a sourceRef takes what its DataSource names, a snapshot of
// any namespace.
func TestResolve(t *testing.T) {
	ref := Source{Kind: "file", Ref: &cdiv1.DataVolumeSourceRef{Kind: "DataSource", Name: "fedora"}}
	snapIn := func(ns string) *cdiv1.DataSource {
		return &cdiv1.DataSource{ObjectMeta: metav1.ObjectMeta{Namespace: "images", Name: "fedora"},
			Spec: cdiv1.DataSourceSpec{Source: cdiv1.DataSourceSource{Snapshot: &cdiv1.DataVolumeSourceSnapshot{Namespace: ns, Name: "f41"}}}}
	}
	got, err := ref.Resolve(snapIn("images"))
	if err != nil || got.Snapshot == nil || got.Snapshot.Name != "f41" || got.Snapshot.Namespace != "images" || got.Claim != nil || got.Ref == nil ||
		!got.CrossNamespace("vms") || got.SourceNamespace() != "images" {
		t.Errorf("Resolve of a snapshot = %+v, %v", got, err)
	}
	if _, err := ref.Resolve(&cdiv1.DataSource{}); err == nil {
		t.Error("Resolve of a DataSource of nothing: no error")
	}
}
