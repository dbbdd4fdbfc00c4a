package storageprofile

import (
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
)

// TestCloneStrategy: the profile's spec wins, then the class's annotation,
// then the provisioner's advice, then snapshots where a class serves them;
// a snapshot clone without a snapshot class is a copy.
func TestCloneStrategy(t *testing.T) {
	class := func(prov string, ann string) *storagev1.StorageClass {
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Provisioner: prov}
		if ann != "" {
			sc.Annotations = map[string]string{AnnCloneStrategy: ann}
		}
		return sc
	}
	for _, tc := range []struct {
		name      string
		spec      *cdiv1.CDICloneStrategy
		sc        *storagev1.StorageClass
		snapClass string
		want      cdiv1.CDICloneStrategy
	}{
		{"unknown driver without snapshots copies", nil, class("example.com/x", ""), "", cdiv1.CloneStrategyHostAssisted},
		{"unknown driver with snapshots", nil, class("example.com/x", ""), "snaps", cdiv1.CloneStrategySnapshot},
		{"virt-local's driver is advised csi-clone", nil, class(LocalProvisioner, ""), "snaps", cdiv1.CloneStrategyCsiClone},
		{"class annotation beats advice", nil, class(LocalProvisioner, "snapshot"), "snaps", cdiv1.CloneStrategySnapshot},
		{"an annotated snapshot stays without a class (the clone falls back)", nil, class("example.com/x", "snapshot"), "", cdiv1.CloneStrategySnapshot},
		{"an unknown annotation is ignored", nil, class("example.com/x", "teleport"), "", cdiv1.CloneStrategyHostAssisted},
		{"spec beats all", ptr.To(cdiv1.CloneStrategyHostAssisted), class(LocalProvisioner, "csi-clone"), "snaps", cdiv1.CloneStrategyHostAssisted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CloneStrategy(tc.spec, tc.sc, tc.snapClass); got != tc.want {
				t.Errorf("CloneStrategy = %q, want %q", got, tc.want)
			}
		})
	}
}
