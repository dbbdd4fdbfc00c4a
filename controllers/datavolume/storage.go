package datavolume

import (
	"context"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// bindsOnFirstConsumer says whether claims of sc bind only once a pod
// uses them (volumeBindingMode WaitForFirstConsumer).
func bindsOnFirstConsumer(sc *storagev1.StorageClass) bool {
	return sc != nil && sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
}

// class is the StorageClass named, nil when name is "" or it is gone.
func (r *Reconciler) class(ctx context.Context, name string) (*storagev1.StorageClass, error) {
	if name == "" {
		return nil, nil
	}
	sc := &storagev1.StorageClass{}
	switch err := r.client.Get(ctx, client.ObjectKey{Name: name}, sc); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading StorageClass %s: %w", name, err)
	}
	return sc, nil
}

// profile is the status of the StorageProfile of class
// (controllers/storageprofile); nil when there is none.
func (r *Reconciler) profile(ctx context.Context, class string) (*cdiv1.StorageProfileStatus, error) {
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
	return &sp.Status, nil
}

// podOptions are the pod options for a claim of class: the file system
// overhead, unless set, is the CDIConfig's for the class
// (controllers/cdiconfig), and so are the pod's resources, unless set, and
// its import proxy.
func (r *Reconciler) podOptions(ctx context.Context, class string) (PodOptions, error) {
	po := r.pod
	cfg, err := r.cdiConfig(ctx)
	if err != nil {
		return po, err
	}
	if po.FilesystemOverhead == 0 {
		po.FilesystemOverhead = cdiconfig.Overhead(cfg, class)
	}
	if len(po.Resources.Requests) == 0 && len(po.Resources.Limits) == 0 {
		po.Resources = cdiconfig.FillingPodResources(cfg)
	}
	po.ProxyEnv = cdiconfig.ProxyEnv(cfg)
	po.Preallocation = cdiconfig.Preallocation(cfg)
	po.InsecureRegistries = cdiconfig.InsecureRegistries(cfg)
	po.TrustedCAProxy = cdiconfig.TrustedCAProxy(cfg)
	if cfg != nil && po.ScratchClass == "" {
		po.ScratchClass = cfg.Status.ScratchSpaceStorageClass
	}
	if po.ScratchOverhead == 0 && r.pod.FilesystemOverhead == 0 {
		scratch := po.ScratchClass
		if scratch == "" {
			scratch = class
		}
		po.ScratchOverhead = cdiconfig.Overhead(cfg, scratch)
	}
	return po, nil
}

// cdiConfig is the CDIConfig CDI and virtkit read, nil when there is none.
func (r *Reconciler) cdiConfig(ctx context.Context) (*cdiv1.CDIConfig, error) {
	cfg := &cdiv1.CDIConfig{}
	switch err := r.client.Get(ctx, client.ObjectKey{Name: cdiconfig.Name}, cfg); {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading CDIConfig %s: %w", cdiconfig.Name, err)
	}
	return cfg, nil
}

// honoursFirstConsumer says whether a pending claim of a class that binds
// on first consumer (bindsOnFirstConsumer), filled for owner (a
// DataVolume, or the claim itself for a bare upload), waits for a
// workload's pod to bind it, as CDI decides it: the CDIConfig honours
// WaitForFirstConsumer and owner does not ask for immediate binding.
// Otherwise the pod that fills the claim is its first consumer.
func (r *Reconciler) honoursFirstConsumer(ctx context.Context, owner metav1.Object) (bool, error) {
	if dvspec.ImmediateBindingRequested(owner) {
		return false, nil
	}
	cfg, err := r.cdiConfig(ctx)
	if err != nil {
		return false, err
	}
	return cdiconfig.HonorsWaitForFirstConsumer(cfg), nil
}
