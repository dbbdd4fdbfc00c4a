package deploy

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

//go:embed crds/*.yaml prerequisites/*.yaml networks/*.yaml
var crdFiles embed.FS

// CRDs returns the CRDs virtkit serves (the kubevirt.io groups and CDI's
// DataVolume, DataSource, CDIConfig, CDI and StorageProfile), sorted by
// name.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return readCRDs("crds/*.yaml")
}

// VolumeSnapshotCRDs returns the CRDs of the CSI snapshot kinds
// (snapshot.storage.k8s.io/v1 VolumeSnapshot, VolumeSnapshotContent and
// VolumeSnapshotClass, and groupsnapshot.storage.k8s.io/v1's group kinds,
// as external-snapshotter v8 defines them), sorted by name. virtkit's
// snapshots use them but do not serve them: a cluster has them with its
// CSI snapshot controller; virt-local installs them.
func VolumeSnapshotCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return readCRDs("prerequisites/*.yaml")
}

// NetworkAttachmentDefinitionCRDs returns the CRD of Multus's
// k8s.cni.cncf.io/v1 NetworkAttachmentDefinition, which VMIs on secondary
// networks name: a cluster has it with its Multus; virt-local installs it.
func NetworkAttachmentDefinitionCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return readCRDs("networks/*.yaml")
}

func readCRDs(glob string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(crdFiles, glob)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(names))
	for _, n := range names {
		b, err := crdFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, crd); err != nil {
			return nil, fmt.Errorf("deploy: %s: %w", n, err)
		}
		crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		out = append(out, crd)
	}
	return out, nil
}

// WaitEstablished waits until every CRD named in crds is Established, so
// that objects of its kind can be created.
func WaitEstablished(ctx context.Context, r client.Reader, crds []*apiextensionsv1.CustomResourceDefinition) error {
	for _, want := range crds {
		for {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			err := r.Get(ctx, client.ObjectKey{Name: want.Name}, crd)
			if err == nil && established(crd) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("deploy: CRD %s not established (last error: %v): %w", want.Name, err, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
