package vm

import (
	"context"
	"fmt"
	"maps"
	"slices"

	k8sv1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	vmictl "github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/virt/storage/dvspec"
)

// Event reasons of the VM's DataVolumes, as KubeVirt's.
const (
	ReasonSuccessfulDataVolumeCreate = "SuccessfulDataVolumeCreate"
	ReasonFailedDataVolumeCreate     = "FailedDataVolumeCreate"
	ReasonFailedDataVolumeImport     = "FailedDataVolumeImport"
)

// DataVolumeFor returns the DataVolume that t, one of vm's
// dataVolumeTemplates, makes: t's metadata and spec in vm's namespace,
// controlled by vm, labelled with vm's UID, allowed to adopt a claim of
// its name, with the template's priority class unless it names its own.
func DataVolumeFor(vm *virtv1.VirtualMachine, t *virtv1.DataVolumeTemplateSpec) *cdiv1.DataVolume {
	dv := &cdiv1.DataVolume{
		TypeMeta: metav1.TypeMeta{APIVersion: cdiv1.SchemeGroupVersion.String(), Kind: "DataVolume"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: vm.Namespace, Name: t.Name,
			Labels:          maps.Clone(t.Labels),
			Annotations:     maps.Clone(t.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(vm, virtv1.VirtualMachineGroupVersionKind)},
		},
		Spec: *t.Spec.DeepCopy(),
	}
	if dv.Labels == nil {
		dv.Labels = map[string]string{}
	}
	dv.Labels[virtv1.CreatedByLabel] = string(vm.UID)
	if dv.Annotations == nil {
		dv.Annotations = map[string]string{}
	}
	dv.Annotations[dvspec.AnnAllowClaimAdoption] = "true"
	if dv.Spec.PriorityClassName == "" && vm.Spec.Template != nil {
		dv.Spec.PriorityClassName = vm.Spec.Template.Spec.PriorityClassName
	}
	return dv
}

// DataVolumes is what a VM's DataVolumes are up to.
type DataVolumes struct {
	// Ready: every DataVolume of the dataVolumeTemplates exists and is
	// filled (Succeeded, or waiting for its first consumer), so that the
	// VMI may start.
	Ready bool
	// Provisioning: a DataVolume a volume names is being filled
	// (printableStatus Provisioning).
	Provisioning bool
	// Err says which DataVolume a volume names failed, or stopped on an
	// error while it retries (printableStatus DataVolumeError).
	Err error
	// Unbound names a claim the template's volumes use that exists and is
	// not bound yet (printableStatus WaitingForVolumeBinding).
	Unbound string
}

// DataVolumesOf sums up the DataVolumes of vm, by name (missing ones
// absent), as KubeVirt's VM controller does.
func DataVolumesOf(vm *virtv1.VirtualMachine, dvs map[string]*cdiv1.DataVolume) DataVolumes {
	out := DataVolumes{Ready: true}
	for i := range vm.Spec.DataVolumeTemplates {
		dv := dvs[vm.Spec.DataVolumeTemplates[i].Name]
		if dv == nil || !filled(dv) {
			out.Ready = false
		}
	}
	if vm.Spec.Template == nil {
		return out
	}
	for _, v := range vm.Spec.Template.Spec.Volumes {
		if v.DataVolume == nil {
			continue
		}
		dv := dvs[v.DataVolume.Name]
		if dv == nil || dv.Status.Phase == cdiv1.Succeeded || dv.Status.Phase == cdiv1.PendingPopulation {
			continue
		}
		if out.Err == nil {
			out.Err = dataVolumeError(dv)
		}
		if bound := dvCondition(dv, cdiv1.DataVolumeBound); (bound != nil && bound.Status == k8sv1.ConditionTrue) || dv.Status.Phase != cdiv1.WaitForFirstConsumer {
			out.Provisioning = true
		}
	}
	return out
}

// filled says whether the VM may create its VMI on dv, as KubeVirt's VM
// controller decides: what the launcher pod accepts (the VMI controller's
// DataVolumeReady), and also a DataVolume waiting for its first consumer,
// whose claim only the VMI's provisioning pod can bind.
func filled(dv *cdiv1.DataVolume) bool {
	return vmictl.DataVolumeReady(dv, true) || vmictl.WaitsForFirstConsumer(dv)
}

// dataVolumeError is KubeVirt's HasDataVolumeErrors for one DataVolume.
func dataVolumeError(dv *cdiv1.DataVolume) error {
	if dv.Status.Phase == cdiv1.Failed {
		return fmt.Errorf("DataVolume %s is in Failed phase", dv.Name)
	}
	if c := dvCondition(dv, cdiv1.DataVolumeRunning); c != nil && c.Status == k8sv1.ConditionFalse && (c.Reason == "Error" || c.Reason == "ImagePullFailed") {
		return fmt.Errorf("DataVolume %s importer has stopped running due to an error: %v", dv.Name, c.Message)
	}
	return nil
}

func dvCondition(dv *cdiv1.DataVolume, t cdiv1.DataVolumeConditionType) *cdiv1.DataVolumeCondition {
	for i := range dv.Status.Conditions {
		if dv.Status.Conditions[i].Type == t {
			return &dv.Status.Conditions[i]
		}
	}
	return nil
}

// syncDataVolumes creates the DataVolumes of vm's dataVolumeTemplates that
// do not exist, and sums up those its volumes name.
func (r *Reconciler) syncDataVolumes(ctx context.Context, vm *virtv1.VirtualMachine) (DataVolumes, *SyncError) {
	names := map[string]bool{}
	for i := range vm.Spec.DataVolumeTemplates {
		names[vm.Spec.DataVolumeTemplates[i].Name] = true
	}
	if vm.Spec.Template != nil {
		for _, v := range vm.Spec.Template.Spec.Volumes {
			if v.DataVolume != nil {
				names[v.DataVolume.Name] = true
			}
		}
	}
	unbound, err := r.unboundClaim(ctx, vm)
	if err != nil {
		return DataVolumes{}, &SyncError{Reason: ReasonFailedDataVolumeCreate, Err: err}
	}
	if len(names) == 0 {
		return DataVolumes{Ready: true, Unbound: unbound}, nil
	}
	dvs := map[string]*cdiv1.DataVolume{}
	for name := range names {
		dv := &cdiv1.DataVolume{}
		switch err := r.client.Get(ctx, client.ObjectKey{Namespace: vm.Namespace, Name: name}, dv); {
		case err == nil:
			dvs[name] = dv
		case !apierrors.IsNotFound(err):
			return DataVolumes{}, &SyncError{Reason: ReasonFailedDataVolumeCreate, Err: fmt.Errorf("reading DataVolume %s/%s: %w", vm.Namespace, name, err)}
		}
	}
	if vm.DeletionTimestamp == nil {
		for i := range vm.Spec.DataVolumeTemplates {
			t := &vm.Spec.DataVolumeTemplates[i]
			if dvs[t.Name] != nil {
				continue
			}
			dv := DataVolumeFor(vm, t)
			if err := r.client.Create(ctx, dv); err != nil && !apierrors.IsAlreadyExists(err) {
				r.recorder.Eventf(vm, k8sv1.EventTypeWarning, ReasonFailedDataVolumeCreate, "Error creating DataVolume %s: %v", dv.Name, err)
				serr := &SyncError{Reason: ReasonFailedDataVolumeCreate, Err: fmt.Errorf("failed to create DataVolume: %w", err)}
				if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
					serr.Terminal = true
				}
				return DataVolumes{}, serr
			}
			r.recorder.Eventf(vm, k8sv1.EventTypeNormal, ReasonSuccessfulDataVolumeCreate, "Created DataVolume %s", dv.Name)
		}
	}
	out := DataVolumesOf(vm, dvs)
	out.Unbound = unbound
	if out.Err != nil && vm.Status.PrintableStatus != virtv1.VirtualMachineStatusDataVolumeError {
		r.recorder.Eventf(vm, k8sv1.EventTypeWarning, ReasonFailedDataVolumeImport, "%v", out.Err)
	}
	return out, nil
}

// claimNames are the claims vm's template uses: its persistentVolumeClaim
// and dataVolume volumes (a DataVolume's claim has its name), hotplugged
// ones aside.
func claimNames(vm *virtv1.VirtualMachine) []string {
	if vm.Spec.Template == nil {
		return nil
	}
	var out []string
	for _, v := range vm.Spec.Template.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil && !v.PersistentVolumeClaim.Hotpluggable:
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		case v.DataVolume != nil && !v.DataVolume.Hotpluggable:
			out = append(out, v.DataVolume.Name)
		}
	}
	return out
}

// unboundClaim names the first claim of vm's template that exists and is
// not bound, as KubeVirt's HasUnboundPVC; "" when there is none.
func (r *Reconciler) unboundClaim(ctx context.Context, vm *virtv1.VirtualMachine) (string, error) {
	for _, name := range claimNames(vm) {
		pvc := &k8sv1.PersistentVolumeClaim{}
		switch err := r.client.Get(ctx, client.ObjectKey{Namespace: vm.Namespace, Name: name}, pvc); {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return "", fmt.Errorf("reading claim %s/%s: %w", vm.Namespace, name, err)
		}
		if pvc.Status.Phase != k8sv1.ClaimBound {
			return name, nil
		}
	}
	return "", nil
}

// vmsNamingClaim maps a claim to the VMs of its namespace whose template
// uses it: its binding changes their printableStatus.
func (r *Reconciler) vmsNamingClaim(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &virtv1.VirtualMachineList{}
	if err := r.client.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if slices.Contains(claimNames(&list.Items[i]), obj.GetName()) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

// vmsNamingDataVolume maps a DataVolume to the VMs of its namespace whose
// template or dataVolumeTemplates name it.
func (r *Reconciler) vmsNamingDataVolume(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &virtv1.VirtualMachineList{}
	if err := r.client.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		vm := &list.Items[i]
		if namesDataVolume(vm, obj.GetName()) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(vm)})
		}
	}
	return out
}

func namesDataVolume(vm *virtv1.VirtualMachine, name string) bool {
	for i := range vm.Spec.DataVolumeTemplates {
		if vm.Spec.DataVolumeTemplates[i].Name == name {
			return true
		}
	}
	if vm.Spec.Template != nil {
		for _, v := range vm.Spec.Template.Spec.Volumes {
			if v.DataVolume != nil && v.DataVolume.Name == name {
				return true
			}
		}
	}
	return false
}
