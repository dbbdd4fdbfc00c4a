package fake

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/spec"
	"github.com/virtkit/virtkit/virt/storage"
)

// plan is storage.PreviewPlan restricted to what the real planner decides
// without reading a file: only volumes a disk uses are planned; a disk
// naming no volume, a source virtkit does not implement, an emptyDisk
// without capacity and cloud-init data that cannot be made are
// *storage.VolumeErrors naming the volume, all reported together; and
// Create is set as the real planner sets it, with the images this fake
// holds prepared standing for the files that exist. s.mu must be held.
func (s *Storage) plan(vmi *virtv1.VirtualMachineInstance, pod storage.Pod) (storage.Plan, error) {
	preview := storage.PreviewPlan(vmi)
	index := make(map[string]int, len(vmi.Spec.Volumes))
	for i := range vmi.Spec.Volumes {
		index[vmi.Spec.Volumes[i].Name] = i
	}
	plan := storage.Plan{}
	var errs []error
	for i, d := range vmi.Spec.Domain.Devices.Disks {
		vi, ok := index[d.Name]
		if !ok {
			errs = append(errs, &storage.VolumeError{Volume: d.Name, Field: fmt.Sprintf("spec.domain.devices.disks[%d].name", i),
				Detail: "no volume of this name in spec.volumes", Err: storage.ErrInvalid})
			continue
		}
		if _, done := plan[d.Name]; done {
			continue
		}
		v := &vmi.Spec.Volumes[vi]
		p := preview[d.Name]
		if err := check(vmi, v, vi, p, pod); err != nil {
			errs = append(errs, err)
			continue
		}
		switch p.Kind {
		case storage.KindPersistentVolumeClaim, storage.KindDataVolume:
			p.Hotpluggable = spec.Hotpluggable(v)
			p.ReadOnly = (v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ReadOnly) || pod.Volumes[v.Name].ReadOnly
			_, there := s.prepared[p.Path]
			p.Create = !there && !p.ReadOnly
		case storage.KindHostDisk:
			_, there := s.prepared[p.Path]
			p.Create = !there && v.HostDisk.Type == virtv1.HostDiskExistsOrCreate
		case storage.KindEmptyDisk:
			_, there := s.prepared[p.Path]
			p.Create = !there
		default:
			// Overlays and ISOs are made afresh at every start.
			p.Create = true
		}
		plan[d.Name] = p
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return plan, nil
}

// check reports what the real planner refuses without reading a file.
func check(vmi *virtv1.VirtualMachineInstance, v *virtv1.Volume, i int, p storage.DiskPlan, pod storage.Pod) error {
	field := "spec.volumes[" + strconv.Itoa(i) + "]"
	fail := func(sentinel error, detail string) error {
		return &storage.VolumeError{Volume: v.Name, Field: field + "." + string(p.Kind), Detail: detail, Err: sentinel}
	}
	switch {
	case p.Kind == storage.KindPersistentVolumeClaim && v.PersistentVolumeClaim == nil:
		return &storage.VolumeError{Volume: v.Name, Field: field,
			Detail: "virtkit cannot make a disk of this volume source yet (sysprep, downwardMetrics, memoryDump, containerPath)", Err: storage.ErrUnsupported}
	case p.Kind == storage.KindHostDisk && !filepath.IsAbs(v.HostDisk.Path):
		return fail(storage.ErrInvalid, "path "+strconv.Quote(v.HostDisk.Path)+" is not absolute")
	case p.Kind == storage.KindHostDisk && !hostDiskNamesFile(v.HostDisk.Path):
		return fail(storage.ErrInvalid, "path "+strconv.Quote(v.HostDisk.Path)+" names no file in a folder")
	case p.Kind == storage.KindHostDisk && v.HostDisk.Type != virtv1.HostDiskExists && v.HostDisk.Type != virtv1.HostDiskExistsOrCreate:
		return fail(storage.ErrInvalid, "unknown type "+strconv.Quote(string(v.HostDisk.Type))+" (want Disk or DiskOrCreate)")
	case p.Kind == storage.KindEmptyDisk && v.EmptyDisk.Capacity.Value() <= 0:
		return fail(storage.ErrInvalid, "capacity "+v.EmptyDisk.Capacity.String()+" must be positive")
	case p.Kind == storage.KindCloudInitNoCloud, p.Kind == storage.KindCloudInitConfigDrive:
		if _, err := storage.CloudInitFiles(vmi, v, pod.Secrets); err != nil {
			return fail(storage.ErrInvalid, err.Error())
		}
	}
	return nil
}

func hostDiskNamesFile(path string) bool {
	_, ok := storage.HostDiskFile(path)
	return ok
}
