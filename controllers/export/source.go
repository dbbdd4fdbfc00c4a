package export

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	exportv1 "kubevirt.io/api/export/v1beta1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vmictl "github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/virt/storage/backendstorage"
	"github.com/virtkit/virtkit/virt/storage/export"
	"github.com/virtkit/virtkit/virt/storage/snapshot"
)

// KubeVirt's reasons of an export's Ready and PVCReady conditions.
const (
	ReasonInitializing    = "Initializing"
	ReasonPodReady        = "PodReady"
	ReasonPodPending      = "PodPending"
	ReasonPodCompleted    = "PodCompleted"
	ReasonUnknown         = "Unknown"
	ReasonInUse           = "InUse"
	ReasonPVCBound        = "PVCBound"
	ReasonPVCPending      = "PVCPending"
	ReasonPVCNotFound     = "PVCNotFound"
	ReasonVMNotFound      = "VMNotFound"
	ReasonVMNoVolumes     = "VMNoVolumes"
	ReasonNotPopulated    = "VolumesNotPopulated"
	ReasonSourceNotServed = "SourceNotSupported"
	// A snapshot export's Ready reasons and VolumesCreated condition.
	ReasonSnapshotNotFound  = "VMSnapshotNotFound"
	ReasonSnapshotNotReady  = "VMSnapshotNotReady"
	ReasonSnapshotNoVolumes = "VMSnapshotNoVolumes"
	ReasonNotAllClaims      = "NotAllPVCsCreated"
	ReasonAllClaimsReady    = "AllPVCsReady"
)

// source is what an export's source says now.
type source struct {
	// vols are the claims to serve, when the source can be served now.
	vols []export.Volume
	// vm names the VM exported (a VM or snapshot source), and vmObj is
	// it, for its manifests; sizes are the claims' sizes.
	vm    *string
	vmObj *virtv1.VirtualMachine
	sizes map[string]resource.Quantity
	// skip: the source can never be served as it is (Phase Skipped);
	// wait: not now (Phase Pending, no server pod). reason and message
	// say why, for the Ready condition.
	skip, wait      bool
	reason, message string
	// inUse: waiting for a pod, or a VM, to let go of the claims.
	inUse bool
	// claimCond is the PVCReady condition of a claim source;
	// volumesCond the VolumesCreated condition of a snapshot source.
	claimCond, volumesCond *exportv1.Condition
}

// sourceOf reads vme's source.
func (r *Reconciler) sourceOf(ctx context.Context, vme *exportv1.VirtualMachineExport) (source, error) {
	s := vme.Spec.Source
	group := ptr.Deref(s.APIGroup, "")
	switch {
	case group == "" && s.Kind == "PersistentVolumeClaim":
		return r.claimSource(ctx, vme)
	case group == virtv1.SchemeGroupVersion.Group && s.Kind == "VirtualMachine":
		return r.vmSource(ctx, vme)
	case group == vmsnapshotv1.SchemeGroupVersion.Group && s.Kind == "VirtualMachineSnapshot":
		return r.snapshotSource(ctx, vme)
	}
	return source{skip: true, reason: ReasonSourceNotServed,
		message: fmt.Sprintf("spec.source: %s %q of API group %q: only claims (PersistentVolumeClaim), virtual machines (kubevirt.io VirtualMachine) "+
			"and their snapshots (snapshot.kubevirt.io VirtualMachineSnapshot) are exported", s.Kind, s.Name, group)}, nil
}

// claimSource: the claim must be bound, filled (its DataVolume, if any,
// Succeeded) and used by no other running pod.
func (r *Reconciler) claimSource(ctx context.Context, vme *exportv1.VirtualMachineExport) (source, error) {
	key := client.ObjectKey{Namespace: vme.Namespace, Name: vme.Spec.Source.Name}
	pvc := &corev1.PersistentVolumeClaim{}
	switch err := r.client.Get(ctx, key, pvc); {
	case apierrors.IsNotFound(err):
		msg := fmt.Sprintf("PersistentVolumeClaim %s not found", key)
		return source{wait: true, reason: ReasonPVCNotFound, message: msg, claimCond: cond(exportv1.ConditionPVC, false, ReasonPVCNotFound, msg)}, nil
	case err != nil:
		return source{}, fmt.Errorf("reading claim %s: %w", key, err)
	}
	var claimCond *exportv1.Condition
	switch pvc.Status.Phase {
	case corev1.ClaimBound:
		claimCond = cond(exportv1.ConditionPVC, true, ReasonPVCBound, "")
	case corev1.ClaimLost:
		msg := fmt.Sprintf("PersistentVolumeClaim %s is lost", key)
		return source{wait: true, reason: ReasonUnknown, message: msg, claimCond: cond(exportv1.ConditionPVC, false, ReasonUnknown, msg)}, nil
	default:
		msg := fmt.Sprintf("PersistentVolumeClaim %s is not bound", key)
		return source{wait: true, reason: ReasonPVCPending, message: msg, claimCond: cond(exportv1.ConditionPVC, false, ReasonPVCPending, msg)}, nil
	}
	vol, why, err := r.claimVolume(ctx, pvc)
	if err != nil || why != "" {
		return source{wait: true, reason: ReasonPVCPending, message: why, claimCond: claimCond}, err
	}
	if pod, err := r.claimUser(ctx, vme, pvc.Name); err != nil || pod != "" {
		return source{wait: true, inUse: true, reason: ReasonInUse, message: fmt.Sprintf("PersistentVolumeClaim %s is in use by pod %s", key, pod), claimCond: claimCond}, err
	}
	return source{vols: []export.Volume{vol}, claimCond: claimCond}, nil
}

// vmSource: the VM must exist, have claims and not run; each claim is
// served once bound and filled, the VM's backend-storage claim among them.
func (r *Reconciler) vmSource(ctx context.Context, vme *exportv1.VirtualMachineExport) (source, error) {
	key := client.ObjectKey{Namespace: vme.Namespace, Name: vme.Spec.Source.Name}
	vm := &virtv1.VirtualMachine{}
	switch err := r.client.Get(ctx, key, vm); {
	case apierrors.IsNotFound(err):
		return source{skip: true, reason: ReasonVMNotFound, message: fmt.Sprintf("Virtual Machine %s not found", key)}, nil
	case err != nil:
		return source{}, fmt.Errorf("reading VM %s: %w", key, err)
	}
	s := source{vm: ptr.To(vm.Name), vmObj: vm, sizes: map[string]resource.Quantity{}}
	var claims []string
	if vm.Spec.Template != nil {
		for _, v := range vm.Spec.Template.Spec.Volumes {
			if c := snapshot.ClaimOf(v); c != "" {
				claims = append(claims, c)
			}
		}
	}
	if vm.Spec.Template != nil && backendstorage.Needed(&vm.Spec.Template.Spec) {
		// The VM's backend storage (EFI variables, vTPM) is served too,
		// as KubeVirt's exports serve it: an archive, its claim having no
		// content type. A VM that never started has none yet, and is
		// exported without it.
		switch c, err := vmictl.FindStateClaim(ctx, r.client, vm.Namespace, vm.Name); {
		case err != nil:
			return source{}, err
		case c != nil:
			claims = append(claims, c.Name)
		}
	}
	if len(claims) == 0 {
		s.skip, s.reason, s.message = true, ReasonVMNoVolumes, fmt.Sprintf("Virtual Machine %s has no claims to export", key)
		return s, nil
	}
	vmi := &virtv1.VirtualMachineInstance{}
	switch err := r.client.Get(ctx, key, vmi); {
	case err == nil && !vmi.IsFinal():
		s.wait, s.inUse, s.reason, s.message = true, true, ReasonInUse, fmt.Sprintf("Virtual Machine %s is running", key)
		return s, nil
	case err != nil && !apierrors.IsNotFound(err):
		return source{}, fmt.Errorf("reading VMI %s: %w", key, err)
	}
	for _, c := range claims {
		pvc := &corev1.PersistentVolumeClaim{}
		ckey := client.ObjectKey{Namespace: vme.Namespace, Name: c}
		switch err := r.client.Get(ctx, ckey, pvc); {
		case apierrors.IsNotFound(err):
			s.wait, s.reason, s.message = true, ReasonNotPopulated, fmt.Sprintf("PersistentVolumeClaim %s not found", ckey)
			return s, nil
		case err != nil:
			return source{}, fmt.Errorf("reading claim %s: %w", ckey, err)
		case pvc.Status.Phase != corev1.ClaimBound:
			s.wait, s.reason, s.message = true, ReasonNotPopulated, fmt.Sprintf("PersistentVolumeClaim %s is not bound", ckey)
			return s, nil
		}
		vol, why, err := r.claimVolume(ctx, pvc)
		if err != nil || why != "" {
			s.wait, s.reason, s.message = true, ReasonNotPopulated, why
			return s, err
		}
		if pod, err := r.claimUser(ctx, vme, c); err != nil || pod != "" {
			s.wait, s.inUse, s.reason, s.message = true, true, ReasonInUse, fmt.Sprintf("PersistentVolumeClaim %s is in use by pod %s", ckey, pod)
			return s, err
		}
		s.vols = append(s.vols, vol)
		s.sizes[c] = claimSize(pvc)
	}
	return s, nil
}

// claimSize is a claim's size: its capacity, or what it asks for.
func claimSize(pvc *corev1.PersistentVolumeClaim) resource.Quantity {
	if q, ok := pvc.Status.Capacity[corev1.ResourceStorage]; ok {
		return q
	}
	return pvc.Spec.Resources.Requests[corev1.ResourceStorage]
}

// claimVolume is how the bound claim pvc is served, or why it cannot be
// yet: the DataVolume owning it has not filled it.
func (r *Reconciler) claimVolume(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (export.Volume, string, error) {
	var dv *cdiv1.DataVolume
	if ref := metav1.GetControllerOf(pvc); ref != nil && ref.Kind == "DataVolume" && ref.APIVersion == cdiv1.SchemeGroupVersion.String() {
		dv = &cdiv1.DataVolume{}
		key := client.ObjectKey{Namespace: pvc.Namespace, Name: ref.Name}
		switch err := r.client.Get(ctx, key, dv); {
		case apierrors.IsNotFound(err):
			dv = nil
		case err != nil:
			return export.Volume{}, "", fmt.Errorf("reading DataVolume %s: %w", key, err)
		case dv.Status.Phase != cdiv1.Succeeded:
			return export.Volume{}, fmt.Sprintf("DataVolume %s has not filled claim %s yet (%s)", key, pvc.Name, dv.Status.Phase), nil
		}
	}
	return export.ClaimVolume(pvc, dv), "", nil
}

// claimUser names a pod, not vme's own, that uses claim and has not
// ended; "" when there is none.
func (r *Reconciler) claimUser(ctx context.Context, vme *exportv1.VirtualMachineExport, claim string) (string, error) {
	pods := &corev1.PodList{}
	if err := r.client.List(ctx, pods, client.InNamespace(vme.Namespace)); err != nil {
		return "", fmt.Errorf("listing the pods of %s: %w", vme.Namespace, err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == vme.UID {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
				return p.Name, nil
			}
		}
	}
	return "", nil
}

// cond is a condition of an export, its times set by the conditions rule.
func cond(t exportv1.ConditionType, ok bool, reason, msg string) *exportv1.Condition {
	st := corev1.ConditionFalse
	if ok {
		st = corev1.ConditionTrue
	}
	return &exportv1.Condition{Type: t, Status: st, Reason: reason, Message: msg}
}
