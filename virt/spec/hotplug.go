package spec

import (
	"k8s.io/apimachinery/pkg/api/equality"
	virtv1 "kubevirt.io/api/core/v1"
)

// Hotpluggable reports whether v is a volume of the kinds hotplug adds and
// removes on a running VMI: a persistentVolumeClaim or dataVolume marked
// hotpluggable.
func Hotpluggable(v *virtv1.Volume) bool {
	return (v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.Hotpluggable) ||
		(v.DataVolume != nil && v.DataVolume.Hotpluggable)
}

// DeclaredHotplug brings a running VMI's hotplugged volumes in line with
// its VM's template, as KubeVirt's declarative volume hotplug does
// (DeclarativeHotplugVolumes): the VMI keeps every volume that is not
// hotpluggable as it is; a hotpluggable volume the template no longer has,
// or has changed, leaves (a changed one comes back as the template has it
// once its unplug is over); a hotpluggable volume of the template that the
// VMI lacks, and whose unplug is not still under way (no status names it),
// joins at the end with the template's disk. Disks follow their volumes,
// except a CD-ROM's: its drive stays while the template has it, empty once
// its volume left (media ejected), and takes a volume added for it (media
// inserted).
// changed says whether the result differs from vmi.
func DeclaredHotplug(template, vmi *virtv1.VirtualMachineInstanceSpec, statuses []virtv1.VolumeStatus) (vols []virtv1.Volume, disks []virtv1.Disk, changed bool) {
	tmplVols := map[string]*virtv1.Volume{}
	for i := range template.Volumes {
		tmplVols[template.Volumes[i].Name] = &template.Volumes[i]
	}
	tmplDisks := map[string]*virtv1.Disk{}
	for i := range template.Domain.Devices.Disks {
		tmplDisks[template.Domain.Devices.Disks[i].Name] = &template.Domain.Devices.Disks[i]
	}
	kept := map[string]bool{}
	for i := range vmi.Volumes {
		v := &vmi.Volumes[i]
		if Hotpluggable(v) {
			t, ok := tmplVols[v.Name]
			if !ok || (Hotpluggable(t) && !equality.Semantic.DeepEqual(t, v)) {
				changed = true
				continue
			}
		}
		kept[v.Name] = true
		vols = append(vols, *v.DeepCopy())
	}
	reported := map[string]bool{}
	for _, s := range statuses {
		reported[s.Name] = true
	}
	added := map[string]bool{}
	for i := range template.Volumes {
		t := &template.Volumes[i]
		if Hotpluggable(t) && !kept[t.Name] && !reported[t.Name] {
			vols = append(vols, *t.DeepCopy())
			added[t.Name] = true
			changed = true
		}
	}
	have := map[string]bool{}
	for i := range vmi.Domain.Devices.Disks {
		d := &vmi.Domain.Devices.Disks[i]
		// A disk without a volume is an empty drive (a cdrom): it stays
		// while the template has it, also when its volume left (the
		// media is ejected, the drive stays).
		_, volumeWas := vmiVolume(vmi, d.Name)
		t := tmplDisks[d.Name]
		ejected := volumeWas && d.CDRom != nil && t != nil && t.CDRom != nil
		if !kept[d.Name] && (volumeWas && !ejected || t == nil) {
			changed = true
			continue
		}
		have[d.Name] = true
		disks = append(disks, *d.DeepCopy())
	}
	for i := range template.Domain.Devices.Disks {
		d := &template.Domain.Devices.Disks[i]
		if added[d.Name] && !have[d.Name] {
			disks = append(disks, *d.DeepCopy())
		}
	}
	return vols, disks, changed
}

func vmiVolume(s *virtv1.VirtualMachineInstanceSpec, name string) (*virtv1.Volume, bool) {
	for i := range s.Volumes {
		if s.Volumes[i].Name == name {
			return &s.Volumes[i], true
		}
	}
	return nil, false
}
