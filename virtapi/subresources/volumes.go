package subresources

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// volumeRequest is one addvolume or removevolume call: exactly one is set.
type volumeRequest struct {
	add    *virtv1.AddVolumeOptions
	remove *virtv1.RemoveVolumeOptions
}

// decodeVolumeRequest reads AddVolumeOptions or RemoveVolumeOptions and
// checks them as KubeVirt does; it marks the volume hotpluggable.
func decodeVolumeRequest(req *request, add bool) (volumeRequest, bool, error) {
	if req.r.Body == nil || req.r.ContentLength == 0 {
		return volumeRequest{}, false, badRequest("Request with no body, a new name is expected as the request body")
	}
	if add {
		opts := &virtv1.AddVolumeOptions{}
		dry, err := mustDecode(req, opts, &opts.DryRun, "v1.AddVolumeOptions",
			`{"name":"data","disk":{"disk":{"bus":"scsi"}},"volumeSource":{"persistentVolumeClaim":{"claimName":"data"}}}`)
		switch {
		case err != nil:
			return volumeRequest{}, false, err
		case opts.Name == "":
			return volumeRequest{}, false, badRequest("AddVolumeOptions requires name to be set")
		case opts.Disk == nil:
			return volumeRequest{}, false, badRequest("AddVolumeOptions requires disk to not be nil")
		case opts.VolumeSource == nil || (opts.VolumeSource.PersistentVolumeClaim == nil && opts.VolumeSource.DataVolume == nil):
			return volumeRequest{}, false, badRequest("AddVolumeOptions requires VolumeSource to not be nil: set volumeSource.persistentVolumeClaim or volumeSource.dataVolume")
		}
		opts.Disk.Name = opts.Name
		if opts.VolumeSource.DataVolume != nil {
			opts.VolumeSource.DataVolume.Hotpluggable = true
		} else {
			opts.VolumeSource.PersistentVolumeClaim.Hotpluggable = true
		}
		return volumeRequest{add: opts}, dry, nil
	}
	opts := &virtv1.RemoveVolumeOptions{}
	dry, err := mustDecode(req, opts, &opts.DryRun, "v1.RemoveVolumeOptions", `{"name":"data"}`)
	if err != nil {
		return volumeRequest{}, false, err
	}
	if opts.Name == "" {
		return volumeRequest{}, false, badRequest("RemoveVolumeOptions requires name to be set")
	}
	return volumeRequest{remove: opts}, dry, nil
}

// verify checks the request against the volumes a spec has and returns
// what is wrong in KubeVirt's words, or "": an added name or source must be
// new, a removed volume must exist and be hotpluggable.
func (v volumeRequest) verify(volumes []virtv1.Volume) string {
	if v.add != nil {
		src := sourceName(v.add.VolumeSource)
		for _, vol := range volumes {
			if vol.Name == v.add.Name {
				return fmt.Sprintf("Unable to add volume [%s] because volume with that name already exists", v.add.Name)
			}
			if volumeSourceIs(vol, src) {
				return fmt.Sprintf("Unable to add volume source [%s] because it already exists", src)
			}
		}
		return ""
	}
	for _, vol := range volumes {
		if vol.Name == v.remove.Name || volumeSourceIs(vol, v.remove.Name) {
			if !hotpluggable(vol) {
				return fmt.Sprintf("Unable to remove volume [%s] because it is not hotpluggable", vol.Name)
			}
			return ""
		}
	}
	return fmt.Sprintf("Unable to remove volume [%s] because it does not exist", v.remove.Name)
}

// apply returns a copy of spec with the volume and its disk added or removed.
func (v volumeRequest) apply(cur *virtv1.VirtualMachineInstanceSpec) *virtv1.VirtualMachineInstanceSpec {
	out := cur.DeepCopy()
	if v.add != nil {
		out.Volumes = append(out.Volumes, virtv1.Volume{Name: v.add.Name, VolumeSource: virtv1.VolumeSource{
			PersistentVolumeClaim: v.add.VolumeSource.PersistentVolumeClaim,
			DataVolume:            v.add.VolumeSource.DataVolume,
		}})
		disk := *v.add.Disk.DeepCopy()
		disk.Name = v.add.Name
		out.Domain.Devices.Disks = append(out.Domain.Devices.Disks, disk)
		return out
	}
	removed := ""
	out.Volumes = out.Volumes[:0]
	for _, vol := range cur.Volumes {
		if removed == "" && (vol.Name == v.remove.Name || volumeSourceIs(vol, v.remove.Name)) {
			removed = vol.Name
			continue
		}
		out.Volumes = append(out.Volumes, *vol.DeepCopy())
	}
	out.Domain.Devices.Disks = out.Domain.Devices.Disks[:0]
	for _, d := range cur.Domain.Devices.Disks {
		if d.Name != removed {
			out.Domain.Devices.Disks = append(out.Domain.Devices.Disks, *d.DeepCopy())
		}
	}
	return out
}

// patch is the JSON patch that applies the request below prefix ("" for a
// VMI, "/spec/template" for a VM), guarded by tests of the current lists.
func (v volumeRequest) patch(prefix string, cur *virtv1.VirtualMachineInstanceSpec) ([]byte, error) {
	next := v.apply(cur)
	return (&jsonPatch{}).
		add("test", prefix+"/spec/volumes", cur.Volumes).
		add("test", prefix+"/spec/domain/devices/disks", cur.Domain.Devices.Disks).
		add("add", prefix+"/spec/volumes", next.Volumes).
		add("add", prefix+"/spec/domain/devices/disks", next.Domain.Devices.Disks).bytes()
}

func sourceName(src *virtv1.HotplugVolumeSource) string {
	switch {
	case src.DataVolume != nil:
		return src.DataVolume.Name
	case src.PersistentVolumeClaim != nil:
		return src.PersistentVolumeClaim.ClaimName
	}
	return ""
}

func volumeSourceIs(vol virtv1.Volume, name string) bool {
	return name != "" && ((vol.DataVolume != nil && vol.DataVolume.Name == name) ||
		(vol.PersistentVolumeClaim != nil && vol.PersistentVolumeClaim.ClaimName == name))
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

// vmVolume changes the VM's template, so the change persists, and the
// running VMI's spec, so the handler hotplugs it now.
func (s *Server) vmVolume(ctx context.Context, req *request, add bool) error {
	vr, dry, err := decodeVolumeRequest(req, add)
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
	if msg := vr.verify(vm.Spec.Template.Spec.Volumes); msg != "" {
		return conflict(vmResource(), req.name, "%s", msg)
	}
	vmi, err := s.getVMI(ctx, req, true)
	if err != nil {
		return err
	}
	// Validate the VMI side before writing anything, so a refusal leaves both untouched.
	live := vmi != nil && vmi.IsRunning() && vr.verify(vmi.Spec.Volumes) == ""
	if err := s.patchVolumes(ctx, vm, vmResource(), "/spec/template", &vm.Spec.Template.Spec, vr, dry); err != nil {
		return err
	}
	if live {
		if err := s.patchVolumes(ctx, vmi, vmiResource(), "", &vmi.Spec, vr, dry); err != nil {
			return err
		}
	}
	return req.accepted()
}

func (s *Server) vmiVolume(ctx context.Context, req *request, add bool) error {
	vr, dry, err := decodeVolumeRequest(req, add)
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
	if msg := vr.verify(vmi.Spec.Volumes); msg != "" {
		return conflict(vmiResource(), req.name, "%s", msg)
	}
	if err := s.patchVolumes(ctx, vmi, vmiResource(), "", &vmi.Spec, vr, dry); err != nil {
		return err
	}
	return req.accepted()
}

func (s *Server) patchVolumes(ctx context.Context, obj client.Object, gr schema.GroupResource, prefix string, cur *virtv1.VirtualMachineInstanceSpec, vr volumeRequest, dry bool) error {
	patch, err := vr.patch(prefix, cur)
	if err != nil {
		return fmt.Errorf("volumes of %s %s/%s: %w", gr.Resource, obj.GetNamespace(), obj.GetName(), err)
	}
	if err := s.client.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch), patchOpts(dry)...); err != nil {
		return writeFailure(gr, obj.GetName(), fmt.Sprintf("patching %s/spec/volumes of %s %s/%s", prefix, gr.Resource, obj.GetNamespace(), obj.GetName()), err)
	}
	return nil
}

// hotpluggable is virt/spec.Hotpluggable, which this package cannot import:
// virtctl builds on its client and speaks only the API (internal/layering).
func hotpluggable(vol virtv1.Volume) bool {
	return (vol.DataVolume != nil && vol.DataVolume.Hotpluggable) ||
		(vol.PersistentVolumeClaim != nil && vol.PersistentVolumeClaim.Hotpluggable)
}
