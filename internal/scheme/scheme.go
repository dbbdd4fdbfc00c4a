// Package scheme builds the runtime.Scheme that virtkit's clients and
// controllers share: Kubernetes' built-in types plus the kubevirt.io groups
// and CDI's.
package scheme

import (
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clonev1 "kubevirt.io/api/clone/v1beta1"
	virtv1 "kubevirt.io/api/core/v1"
	exportv1 "kubevirt.io/api/export/v1beta1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
	migrationsv1 "kubevirt.io/api/migrations/v1alpha1"
	poolv1 "kubevirt.io/api/pool/v1beta1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	uploadv1beta1 "kubevirt.io/containerized-data-importer-api/pkg/apis/upload/v1beta1"
)

// New returns a scheme with the Kubernetes built-in types, the CRD types,
// kubevirt.io/v1, instancetype.kubevirt.io/v1beta1 (instancetypes and
// preferences), migrations.kubevirt.io/v1alpha1 (MigrationPolicy) and
// pool.kubevirt.io/v1beta1 (VirtualMachinePool), cdi.kubevirt.io/v1beta1
// (DataVolume, DataSource), upload.cdi.kubevirt.io/v1beta1
// (UploadTokenRequest), snapshot.kubevirt.io/v1beta1 (VM snapshots and
// restores), clone.kubevirt.io/v1beta1 (VM clones), export.kubevirt.io/v1beta1
// (VirtualMachineExport) and
// snapshot.storage.k8s.io/v1 (the CSI VolumeSnapshot kinds). Registration of these
// well-known groups cannot fail, so an error here is a programming error
// and panics.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		virtv1.AddToScheme,
		instancetypev1beta1.AddToScheme,
		migrationsv1.AddToScheme,
		poolv1.AddToScheme,
		cdiv1.AddToScheme,
		uploadv1beta1.AddToScheme,
		snapshotv1.AddToScheme,
		vmsnapshotv1.AddToScheme,
		clonev1.AddToScheme,
		exportv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// Served says whether the cluster that m maps serves the kind of obj, one
// of this scheme's: the CSI VolumeSnapshot kinds, for one, come with the
// cluster's snapshot controller and may be missing. An error other than
// "no such kind" is returned with false.
func Served(m meta.RESTMapper, obj runtime.Object) (bool, error) {
	gvks, _, err := New().ObjectKinds(obj)
	if err != nil {
		return false, err
	}
	_, err = m.RESTMapping(gvks[0].GroupKind(), gvks[0].Version)
	switch {
	case meta.IsNoMatchError(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}
