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
	list := &corev1.PersistentVolumeClaimList{}
	if err := r.reader.List(ctx, list, client.InNamespace(vmi.Namespace), client.MatchingLabels{backendstorage.LabelVM: vmi.Name}); err != nil {
		return "", fmt.Errorf("listing the backend-storage claims of %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	if c := backendstorage.Find(list.Items, vmi); c != nil {
		return c.Name, nil
	}
	// KubeVirt's older claims carry no label, only their name.
	legacy := &corev1.PersistentVolumeClaim{}
	switch err := r.reader.Get(ctx, client.ObjectKey{Namespace: vmi.Namespace, Name: backendstorage.LegacyName(vmi.Name)}, legacy); {
	case err == nil:
		if c := backendstorage.Find([]corev1.PersistentVolumeClaim{*legacy}, vmi); c != nil {
			return c.Name, nil
		}
	case !apierrors.IsNotFound(err):
		return "", fmt.Errorf("reading backend-storage claim %s/%s: %w", vmi.Namespace, backendstorage.LegacyName(vmi.Name), err)
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
