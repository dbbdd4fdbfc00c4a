package subresources

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virtapi/subresources/requests"
)

// volumePatch is the JSON patch that applies v below prefix ("" for a
// VMI, "/spec/template" for a VM), guarded by tests of the current lists.
func volumePatch(v requests.Volume, prefix string, cur *virtv1.VirtualMachineInstanceSpec) ([]byte, error) {
	next := v.Apply(cur)
	return (&jsonPatch{}).
		add("test", prefix+"/spec/volumes", cur.Volumes).
		add("test", prefix+"/spec/domain/devices/disks", cur.Domain.Devices.Disks).
		add("add", prefix+"/spec/volumes", next.Volumes).
		add("add", prefix+"/spec/domain/devices/disks", next.Domain.Devices.Disks).bytes()
}

// vmAddVolume is PUT virtualmachines/NAME/addvolume (v1.AddVolumeOptions).
func (s *Server) vmAddVolume(ctx context.Context, req *request) error {
	return s.vmVolume(ctx, req, true)
}

// vmRemoveVolume is PUT virtualmachines/NAME/removevolume (v1.RemoveVolumeOptions).
func (s *Server) vmRemoveVolume(ctx context.Context, req *request) error {
	return s.vmVolume(ctx, req, false)
}

// vmiAddVolume is PUT virtualmachineinstances/NAME/addvolume: the running
// VMI only, gone when it stops.
func (s *Server) vmiAddVolume(ctx context.Context, req *request) error {
	return s.vmiVolume(ctx, req, true)
}

// vmiRemoveVolume is PUT virtualmachineinstances/NAME/removevolume.
func (s *Server) vmiRemoveVolume(ctx context.Context, req *request) error {
	return s.vmiVolume(ctx, req, false)
}

// vmVolume changes the VM's template only, as KubeVirt's virt-api does
// with declarative volume hotplug (its default): the VM controller then
// carries the change to the running VMI (controllers/vm), so the volume
// persists and there is one writer of the VMI's spec.
func (s *Server) vmVolume(ctx context.Context, req *request, add bool) error {
	vr, dry, err := requests.DecodeVolume(req.w, req.r, add)
	if err != nil {
		return err
	}
	vm, err := s.getVM(ctx, req)
	if err != nil {
		return err
	}
	if vm.Spec.Template == nil {
		return conflict(vmResource(), req.name, "VirtualMachine has no spec.template to add a volume to")
	}
	if msg := vr.Verify(vm.Spec.Template.Spec.Volumes); msg != "" {
		return conflict(vmResource(), req.name, "%s", msg)
	}
	if err := s.sourceExists(ctx, req.namespace, vr); err != nil {
		return err
	}
	if err := s.patchVolumes(ctx, vm, vmResource(), "/spec/template", &vm.Spec.Template.Spec, vr, dry); err != nil {
		return err
	}
	return req.accepted()
}

func (s *Server) vmiVolume(ctx context.Context, req *request, add bool) error {
	vr, dry, err := requests.DecodeVolume(req.w, req.r, add)
	if err != nil {
		return err
	}
	vmi, err := s.getVMI(ctx, req, false)
	if err != nil {
		return err
	}
	if !vmi.IsRunning() {
		return conflict(vmiResource(), req.name, msgVMIRunning)
	}
	if msg := vr.Verify(vmi.Spec.Volumes); msg != "" {
		return conflict(vmiResource(), req.name, "%s", msg)
	}
	if err := s.sourceExists(ctx, req.namespace, vr); err != nil {
		return err
	}
	if err := s.patchVolumes(ctx, vmi, vmiResource(), "", &vmi.Spec, vr, dry); err != nil {
		return err
	}
	return req.accepted()
}

func (s *Server) patchVolumes(ctx context.Context, obj client.Object, gr schema.GroupResource, prefix string, cur *virtv1.VirtualMachineInstanceSpec, vr requests.Volume, dry bool) error {
	patch, err := volumePatch(vr, prefix, cur)
	if err != nil {
		return fmt.Errorf("volumes of %s %s/%s: %w", gr.Resource, obj.GetNamespace(), obj.GetName(), err)
	}
	if err := s.client.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch), patchOpts(dry)...); err != nil {
		return writeFailure(gr, obj.GetName(), fmt.Sprintf("patching %s/spec/volumes of %s %s/%s", prefix, gr.Resource, obj.GetNamespace(), obj.GetName()), err)
	}
	return nil
}

// sourceExists refuses an added volume whose source is not there: a claim
// that does not exist, or a DataVolume of which neither the DataVolume nor
// its claim does (a DataVolume still importing is fine). Nothing is
// written before it answers.
func (s *Server) sourceExists(ctx context.Context, namespace string, vr requests.Volume) error {
	if vr.Add == nil {
		return nil
	}
	src := vr.Add.VolumeSource
	var name, field string
	switch {
	case src.PersistentVolumeClaim != nil:
		name, field = src.PersistentVolumeClaim.ClaimName, "volumeSource.persistentVolumeClaim.claimName"
	case src.DataVolume != nil:
		name, field = src.DataVolume.Name, "volumeSource.dataVolume.name"
	default:
		return nil
	}
	key := types.NamespacedName{Namespace: namespace, Name: name}
	err := s.client.Get(ctx, key, &corev1.PersistentVolumeClaim{})
	if apierrors.IsNotFound(err) && src.DataVolume != nil {
		err = s.client.Get(ctx, key, &cdiv1.DataVolume{})
	}
	switch {
	case apierrors.IsNotFound(err):
		kind := "PersistentVolumeClaim"
		if src.DataVolume != nil {
			kind = "DataVolume"
		}
		return badRequest("AddVolumeOptions %s: %s %s does not exist in namespace %s", field, kind, name, namespace)
	case err != nil:
		return fmt.Errorf("addvolume: reading %s: %w", key, err)
	}
	return nil
}
