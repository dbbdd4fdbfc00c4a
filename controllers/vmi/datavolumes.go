package vmi

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	virtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ReasonFailedPvcNotFound is the event reason while a volume's claim does
// not exist yet, as KubeVirt's.
const ReasonFailedPvcNotFound = "FailedPvcNotFound"

// DataVolumeReady says whether a dataVolume volume can go into a launcher
// pod, as KubeVirt's VMI controller decides: its DataVolume is filled
// (Succeeded, or waiting for its first consumer or a populator), or there is
// no DataVolume of that name and the claim exists. dv and claimExists are
// what the API holds (dv nil when there is none).
func DataVolumeReady(dv *cdiv1.DataVolume, claimExists bool) bool {
	if dv == nil {
		return claimExists
	}
	switch dv.Status.Phase {
	case cdiv1.Succeeded, cdiv1.WaitForFirstConsumer, cdiv1.PendingPopulation:
		return true
	}
	return false
}

// dataVolumesReady reports whether every non-hotpluggable dataVolume volume
// of vmi is ready (DataVolumeReady); the launcher pod waits until they are.
// DataVolume changes wake the VMI (vmisNamingDataVolume).
func (r *Reconciler) dataVolumesReady(ctx context.Context, vmi *virtv1.VirtualMachineInstance) (bool, error) {
	for _, v := range vmi.Spec.Volumes {
		if v.DataVolume == nil || v.DataVolume.Hotpluggable {
			continue
		}
		key := client.ObjectKey{Namespace: vmi.Namespace, Name: v.DataVolume.Name}
		dv := &cdiv1.DataVolume{}
		switch err := r.client.Get(ctx, key, dv); {
		case apierrors.IsNotFound(err):
			dv = nil
		case err != nil:
			return false, fmt.Errorf("reading DataVolume %s: %w", key, err)
		}
		claimExists := false
		if dv == nil {
			err := r.client.Get(ctx, key, &corev1.PersistentVolumeClaim{})
			if err != nil && !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("reading claim %s: %w", key, err)
			}
			claimExists = err == nil
			if !claimExists {
				r.recorder.Eventf(vmi, corev1.EventTypeNormal, ReasonFailedPvcNotFound, "PVC %s does not exist, waiting for it to appear", key)
			}
		}
		if !DataVolumeReady(dv, claimExists) {
			return false, nil
		}
	}
	return true, nil
}

// vmisNamingDataVolume maps a DataVolume to the VMIs of its namespace
// with a volume of its name.
func (r *Reconciler) vmisNamingDataVolume(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &virtv1.VirtualMachineInstanceList{}
	if err := r.client.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		for _, v := range list.Items[i].Spec.Volumes {
			if v.DataVolume != nil && v.DataVolume.Name == obj.GetName() {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
				break
			}
		}
	}
	return out
}
