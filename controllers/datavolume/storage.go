package datavolume

import (
	"context"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/cdiconfig"
	"github.com/virtkit/virtkit/virt/storage/dvspec"
)

// annDefaultClass marks the cluster's default StorageClass.
const annDefaultClass = "storageclass.kubernetes.io/is-default-class"

// storageClass is the StorageClass dv's claim gets: the one it names, else
// the cluster's default; "" when neither is known.
func (r *Reconciler) storageClass(ctx context.Context, dv *cdiv1.DataVolume) (string, error) {
	if c := dvspec.StorageClassOf(dv); c != "" {
		return c, nil
	}
	list := &storagev1.StorageClassList{}
	if err := r.client.List(ctx, list); err != nil {
		return "", fmt.Errorf("listing StorageClasses: %w", err)
	}
	for i := range list.Items {
		if list.Items[i].Annotations[annDefaultClass] == "true" {
			return list.Items[i].Name, nil
		}
	}
	return "", nil
}

// bindsOnFirstConsumer says whether claims of class bind only once a pod
// uses them (volumeBindingMode WaitForFirstConsumer).
func (r *Reconciler) bindsOnFirstConsumer(ctx context.Context, class string) (bool, error) {
	if class == "" {
		return false, nil
	}
	sc := &storagev1.StorageClass{}
	switch err := r.client.Get(ctx, client.ObjectKey{Name: class}, sc); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading StorageClass %s: %w", class, err)
	}
	return sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer, nil
}

// profileSets are the claim property sets of the StorageProfile of class
// (controllers/storageprofile); nil when there is none.
func (r *Reconciler) profileSets(ctx context.Context, class string) ([]cdiv1.ClaimPropertySet, error) {
	if class == "" {
		return nil, nil
	}
	sp := &cdiv1.StorageProfile{}
	switch err := r.client.Get(ctx, client.ObjectKey{Name: class}, sp); {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading StorageProfile %s: %w", class, err)
	}
	return sp.Status.ClaimPropertySets, nil
}

// podOptions are the pod options for a claim of class: the file system
// overhead, unless set, is the CDIConfig's for the class
// (controllers/cdiconfig).
func (r *Reconciler) podOptions(ctx context.Context, class string) (PodOptions, error) {
	po := r.pod
	if po.FilesystemOverhead != 0 {
		return po, nil
	}
	cfg := &cdiv1.CDIConfig{}
	switch err := r.client.Get(ctx, client.ObjectKey{Name: cdiconfig.Name}, cfg); {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		cfg = nil
	case err != nil:
		return po, fmt.Errorf("reading CDIConfig %s: %w", cdiconfig.Name, err)
	}
	po.FilesystemOverhead = cdiconfig.Overhead(cfg, class)
	return po, nil
}
