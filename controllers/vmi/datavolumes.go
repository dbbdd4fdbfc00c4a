package vmi

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// (Succeeded, or waiting for a populator, which the launcher pod's
// scheduling sets off), or there is no DataVolume of that name and the
// claim exists. dv and claimExists are what the API holds (dv nil when
// there is none). A DataVolume waiting for its first consumer is not
// ready: a provisioning pod binds its claim first (WaitsForFirstConsumer).
func DataVolumeReady(dv *cdiv1.DataVolume, claimExists bool) bool {
	if dv == nil {
		return claimExists
	}
	switch dv.Status.Phase {
	case cdiv1.Succeeded, cdiv1.PendingPopulation:
		return true
	}
	return false
}

// WaitsForFirstConsumer says whether dv waits for a pod to bind its claim
// before it is filled (phase WaitForFirstConsumer, CDI's
// HonorWaitForFirstConsumer): the VMI then runs a provisioning pod
// (RenderProvisioningPod) in place of its launcher pod.
func WaitsForFirstConsumer(dv *cdiv1.DataVolume) bool {
	return dv != nil && dv.Status.Phase == cdiv1.WaitForFirstConsumer
}

// dataVolumesReady reports whether every non-hotpluggable dataVolume volume
// of vmi is ready (DataVolumeReady); the launcher pod waits until they are.
// waiting says one of them waits for its first consumer. It also returns
// the DataVolumes of all its dataVolume volumes that exist, for the
// DataVolumesReady condition. DataVolume changes wake the VMI
// (vmisNamingDataVolume).
func (r *Reconciler) dataVolumesReady(ctx context.Context, vmi *virtv1.VirtualMachineInstance) (ready, waiting bool, _ []*cdiv1.DataVolume, _ error) {
	ready = true
	var dvs []*cdiv1.DataVolume
	for _, v := range vmi.Spec.Volumes {
		if v.DataVolume == nil {
			continue
		}
		key := client.ObjectKey{Namespace: vmi.Namespace, Name: v.DataVolume.Name}
		dv := &cdiv1.DataVolume{}
		switch err := r.client.Get(ctx, key, dv); {
		case apierrors.IsNotFound(err):
			dv = nil
		case err != nil:
			return false, false, nil, fmt.Errorf("reading DataVolume %s: %w", key, err)
		default:
			dvs = append(dvs, dv)
		}
		if v.DataVolume.Hotpluggable {
			continue
		}
		waiting = waiting || WaitsForFirstConsumer(dv)
		if !ready {
			continue
		}
		claimExists := false
		if dv == nil {
			err := r.client.Get(ctx, key, &corev1.PersistentVolumeClaim{})
			if err != nil && !apierrors.IsNotFound(err) {
				return false, false, nil, fmt.Errorf("reading claim %s: %w", key, err)
			}
			claimExists = err == nil
			if !claimExists {
				r.recorder.Eventf(vmi, corev1.EventTypeNormal, ReasonFailedPvcNotFound, "PVC %s does not exist, waiting for it to appear", key)
			}
		}
		ready = DataVolumeReady(dv, claimExists)
	}
	return ready, waiting, dvs, nil
}

// Reasons and messages of the DataVolumesReady condition, KubeVirt's.
const (
	ReasonAllDVsReady     = "AllDVsReady"
	ReasonNotAllDVsReady  = "NotAllDVsReady"
	messageAllDVsReady    = "All of the VMI's DVs are bound and ready"
	messageNotAllDVsReady = "Not all of the VMI's DVs are ready"
)

// SetDataVolumesCondition sets st's DataVolumesReady condition from the
// Ready conditions of the VMI's DataVolumes, as KubeVirt aggregates them:
// True when all are True, False when one is False, Unknown otherwise. A
// VMI with no DataVolume gets no condition. The transition time moves only
// when the status does.
func SetDataVolumesCondition(st *virtv1.VirtualMachineInstanceStatus, dvs []*cdiv1.DataVolume, now metav1.Time) {
	if len(dvs) == 0 {
		return
	}
	c := virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceDataVolumesReady,
		Status: corev1.ConditionTrue, Reason: ReasonAllDVsReady, Message: messageAllDVsReady}
	for _, dv := range dvs {
		s := corev1.ConditionUnknown
		for _, dc := range dv.Status.Conditions {
			if dc.Type == cdiv1.DataVolumeReady {
				s = dc.Status
			}
		}
		if s == corev1.ConditionTrue {
			continue
		}
		c.Reason, c.Message = ReasonNotAllDVsReady, messageNotAllDVsReady
		if s == corev1.ConditionFalse || c.Status == corev1.ConditionTrue {
			c.Status = s
		}
	}
	for i := range st.Conditions {
		old := &st.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		c.LastTransitionTime = old.LastTransitionTime
		if old.Status != c.Status {
			c.LastTransitionTime = now
		}
		*old = c
		return
	}
	c.LastTransitionTime = now
	st.Conditions = append(st.Conditions, c)
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
