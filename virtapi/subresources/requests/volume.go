package requests

import (
	"fmt"
	"net/http"

	virtv1 "kubevirt.io/api/core/v1"
)

// Volume is one addvolume or removevolume call: exactly one is set.
type Volume struct {
	Add    *virtv1.AddVolumeOptions
	Remove *virtv1.RemoveVolumeOptions
}

// DecodeVolume reads the AddVolumeOptions (add) or RemoveVolumeOptions
// body of r and checks it as KubeVirt does; it marks an added volume
// hotpluggable. The bool is the dry run.
func DecodeVolume(w http.ResponseWriter, r *http.Request, add bool) (Volume, bool, error) {
	if r.Body == nil || r.ContentLength == 0 {
		return Volume{}, false, badRequest("Request with no body, a new name is expected as the request body")
	}
	if add {
		opts := &virtv1.AddVolumeOptions{}
		dry, err := DecodeDry(w, r, opts, &opts.DryRun, "v1.AddVolumeOptions",
			`{"name":"data","disk":{"disk":{"bus":"scsi"}},"volumeSource":{"persistentVolumeClaim":{"claimName":"data"}}}`)
		switch {
		case err != nil:
			return Volume{}, false, err
		case opts.Name == "":
			return Volume{}, false, badRequest("AddVolumeOptions requires name to be set")
		case opts.Disk == nil:
			return Volume{}, false, badRequest("AddVolumeOptions requires disk to not be nil")
		case opts.VolumeSource == nil || (opts.VolumeSource.PersistentVolumeClaim == nil && opts.VolumeSource.DataVolume == nil):
			return Volume{}, false, badRequest("AddVolumeOptions requires VolumeSource to not be nil: set volumeSource.persistentVolumeClaim or volumeSource.dataVolume")
		}
		opts.Disk.Name = opts.Name
		if opts.VolumeSource.DataVolume != nil {
			opts.VolumeSource.DataVolume.Hotpluggable = true
		} else {
			opts.VolumeSource.PersistentVolumeClaim.Hotpluggable = true
		}
		return Volume{Add: opts}, dry, nil
	}
	opts := &virtv1.RemoveVolumeOptions{}
	dry, err := DecodeDry(w, r, opts, &opts.DryRun, "v1.RemoveVolumeOptions", `{"name":"data"}`)
	if err != nil {
		return Volume{}, false, err
	}
	if opts.Name == "" {
		return Volume{}, false, badRequest("RemoveVolumeOptions requires name to be set")
	}
	return Volume{Remove: opts}, dry, nil
}

// Verify checks the request against the volumes a spec has and returns
// what is wrong in KubeVirt's words, or "": an added name or source must be
// new, a removed volume must exist and be hotpluggable.
func (v Volume) Verify(volumes []virtv1.Volume) string {
	if v.Add != nil {
		src := sourceName(v.Add.VolumeSource)
		for _, vol := range volumes {
			if vol.Name == v.Add.Name {
				return fmt.Sprintf("Unable to add volume [%s] because volume with that name already exists", v.Add.Name)
			}
			if volumeSourceIs(vol, src) {
				return fmt.Sprintf("Unable to add volume source [%s] because it already exists", src)
			}
		}
		return ""
	}
	for _, vol := range volumes {
		if vol.Name == v.Remove.Name || volumeSourceIs(vol, v.Remove.Name) {
			if !hotpluggable(vol) {
				return fmt.Sprintf("Unable to remove volume [%s] because it is not hotpluggable", vol.Name)
			}
			return ""
		}
	}
	return fmt.Sprintf("Unable to remove volume [%s] because it does not exist", v.Remove.Name)
}

// Apply returns a copy of spec with the volume and its disk added or removed.
func (v Volume) Apply(cur *virtv1.VirtualMachineInstanceSpec) *virtv1.VirtualMachineInstanceSpec {
	out := cur.DeepCopy()
	if v.Add != nil {
		out.Volumes = append(out.Volumes, virtv1.Volume{Name: v.Add.Name, VolumeSource: virtv1.VolumeSource{
			PersistentVolumeClaim: v.Add.VolumeSource.PersistentVolumeClaim,
			DataVolume:            v.Add.VolumeSource.DataVolume,
		}})
		disk := *v.Add.Disk.DeepCopy()
		disk.Name = v.Add.Name
		out.Domain.Devices.Disks = append(out.Domain.Devices.Disks, disk)
		return out
	}
	removed := ""
	out.Volumes = out.Volumes[:0]
	for _, vol := range cur.Volumes {
		if removed == "" && (vol.Name == v.Remove.Name || volumeSourceIs(vol, v.Remove.Name)) {
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

// hotpluggable is virt/spec.Hotpluggable, which this package cannot import:
// virtctl builds on the subresources client and speaks only the API
// (internal/layering).
func hotpluggable(vol virtv1.Volume) bool {
	return (vol.DataVolume != nil && vol.DataVolume.Hotpluggable) ||
		(vol.PersistentVolumeClaim != nil && vol.PersistentVolumeClaim.Hotpluggable)
}
