package vmi

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	virtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/storage/backendstorage"
)

// ReasonBackendStorageCreated is the event reason when a VMI's
// backend-storage claim is made.
const ReasonBackendStorageCreated = "BackendStorageCreated"

// stateClaim is the name of vmi's backend-storage claim, made now if it
// has none; "" for a VMI that needs none. It reads the claims from the
// API, not the cache: a claim made by an earlier pass that the cache has
// not seen yet would otherwise be made twice.
func (r *Reconciler) stateClaim(ctx context.Context, vmi *virtv1.VirtualMachineInstance, opts PodOptions) (string, error) {
	if !backendstorage.Needed(&vmi.Spec) {
		return "", nil
	}
	switch c, err := FindStateClaim(ctx, r.reader, vmi.Namespace, vmi.Name); {
	case err != nil:
		return "", err
	case c != nil:
		return c.Name, nil
	}
	c, err := NewStateClaim(ctx, r.reader, vmi, opts.StateStorageClass)
	if err != nil {
		return "", err
	}
	if err := r.client.Create(ctx, c); err != nil {
		return "", fmt.Errorf("creating the backend-storage claim of %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	r.recorder.Eventf(vmi, corev1.EventTypeNormal, ReasonBackendStorageCreated, "Created backend-storage claim %s", c.Name)
	return c.Name, nil
}

// FindStateClaim is the backend-storage claim of VM (or VMI)
// namespace/vm read through reader (backendstorage.Find's rule), nil when
// it has none: the claims labelled for it are listed; only when there are
// none is KubeVirt's older, unlabelled name read.
func FindStateClaim(ctx context.Context, reader client.Reader, namespace, vm string) (*corev1.PersistentVolumeClaim, error) {
	list := &corev1.PersistentVolumeClaimList{}
	if err := reader.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{backendstorage.LabelVM: vm}); err != nil {
		return nil, fmt.Errorf("listing the backend-storage claims of %s/%s: %w", namespace, vm, err)
	}
	if c := backendstorage.FindFor(list.Items, namespace, vm); c != nil {
		return c, nil
	}
	legacy := &corev1.PersistentVolumeClaim{}
	switch err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: backendstorage.LegacyName(vm)}, legacy); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading backend-storage claim %s/%s: %w", namespace, backendstorage.LegacyName(vm), err)
	}
	return backendstorage.FindFor([]corev1.PersistentVolumeClaim{*legacy}, namespace, vm), nil
}

// NewStateClaim renders a new backend-storage claim of vmi
// (backendstorage.Claim): its class is configured (the KubeVirt CR's
// vmStateStorageClass) or the cluster's default for VMs, and its access
// mode what the class's StorageProfile offers, both read through reader.
// The migration controller makes the claims of migration targets with it.
func NewStateClaim(ctx context.Context, reader client.Reader, vmi *virtv1.VirtualMachineInstance, configured string) (*corev1.PersistentVolumeClaim, error) {
	classes := &storagev1.StorageClassList{}
	if err := reader.List(ctx, classes); err != nil {
		return nil, fmt.Errorf("listing storage classes for the backend storage of %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	class, err := backendstorage.Class(configured, classes.Items)
	if err != nil {
		return nil, fmt.Errorf("VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	var profile *cdiv1.StorageProfile
	p := &cdiv1.StorageProfile{}
	switch err := reader.Get(ctx, client.ObjectKey{Name: class}, p); {
	case err == nil:
		profile = p
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		// No CDI, or no profile: the class's defaults.
	default:
		return nil, fmt.Errorf("reading storage profile %s: %w", class, err)
	}
	return backendstorage.Claim(vmi, class, backendstorage.AccessMode(configured != "", profile)), nil
}
