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
	if err := r.reader.List(ctx, list, client.InNamespace(vmi.Namespace)); err != nil {
		return "", fmt.Errorf("listing the claims of %s for its backend storage: %w", vmi.Namespace, err)
	}
	if c := backendstorage.Find(list.Items, vmi); c != nil {
		return c.Name, nil
	}
	classes := &storagev1.StorageClassList{}
	if err := r.reader.List(ctx, classes); err != nil {
		return "", fmt.Errorf("listing storage classes for the backend storage of %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	class, err := backendstorage.Class(opts.StateStorageClass, classes.Items)
	if err != nil {
		return "", fmt.Errorf("VirtualMachineInstance %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	var profile *cdiv1.StorageProfile
	p := &cdiv1.StorageProfile{}
	switch err := r.reader.Get(ctx, client.ObjectKey{Name: class}, p); {
	case err == nil:
		profile = p
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		// No CDI, or no profile: the class's defaults.
	default:
		return "", fmt.Errorf("reading storage profile %s: %w", class, err)
	}
	c := backendstorage.Claim(vmi, class, backendstorage.AccessMode(opts.StateStorageClass != "", profile))
	if err := r.client.Create(ctx, c); err != nil {
		return "", fmt.Errorf("creating the backend-storage claim of %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	r.recorder.Eventf(vmi, corev1.EventTypeNormal, ReasonBackendStorageCreated, "Created backend-storage claim %s", c.Name)
	return c.Name, nil
}
