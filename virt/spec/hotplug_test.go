package spec_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/spec"
)

func claimVol(name, claim string, hot bool) virtv1.Volume {
	return virtv1.Volume{Name: name, VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}, Hotpluggable: hot}}}
}

func scsiDisk(name string) virtv1.Disk {
	return virtv1.Disk{Name: name, DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusSCSI}}}
}

func specOf(vols []virtv1.Volume, disks ...virtv1.Disk) virtv1.VirtualMachineInstanceSpec {
	s := virtv1.VirtualMachineInstanceSpec{Volumes: vols}
	s.Domain.Devices.Disks = disks
	return s
}

// The template's hotpluggable volumes reach the running VMI and leave it,
// disks with them; other volumes are not this rule's; a volume still being
// unplugged is not added back until its status is gone.
func TestDeclaredHotplug(t *testing.T) {
	root, data := claimVol("root", "root", false), claimVol("data", "data", false)
	hot, hot2 := claimVol("hot", "hot-claim", true), claimVol("hot", "other-claim", true)
	for _, c := range []struct {
		name                string
		template, vmi       virtv1.VirtualMachineInstanceSpec
		statuses            []virtv1.VolumeStatus
		wantVols, wantDisks []string
		changed             bool
	}{
		{"nothing to do", specOf([]virtv1.Volume{root}, scsiDisk("root")), specOf([]virtv1.Volume{root}, scsiDisk("root")), nil,
			[]string{"root"}, []string{"root"}, false},
		{"added to the template", specOf([]virtv1.Volume{root, hot}, scsiDisk("root"), scsiDisk("hot")), specOf([]virtv1.Volume{root}, scsiDisk("root")), nil,
			[]string{"root", "hot"}, []string{"root", "hot"}, true},
		{"removed from the template", specOf([]virtv1.Volume{root}, scsiDisk("root")), specOf([]virtv1.Volume{root, hot}, scsiDisk("root"), scsiDisk("hot")), nil,
			[]string{"root"}, []string{"root"}, true},
		{"still unplugging", specOf([]virtv1.Volume{root, hot}, scsiDisk("root"), scsiDisk("hot")), specOf([]virtv1.Volume{root}, scsiDisk("root")),
			[]virtv1.VolumeStatus{{Name: "hot", Phase: virtv1.HotplugVolumeDetaching}},
			[]string{"root"}, []string{"root"}, false},
		{"changed in the template: out first", specOf([]virtv1.Volume{root, hot2}, scsiDisk("root"), scsiDisk("hot")), specOf([]virtv1.Volume{root, hot}, scsiDisk("root"), scsiDisk("hot")),
			[]virtv1.VolumeStatus{{Name: "hot", Phase: virtv1.VolumeReady}},
			[]string{"root"}, []string{"root"}, true},
		{"a cold volume changed: not hotplug's", specOf([]virtv1.Volume{root, claimVol("data", "new", false)}, scsiDisk("root"), scsiDisk("data")),
			specOf([]virtv1.Volume{root, data}, scsiDisk("root"), scsiDisk("data")), nil,
			[]string{"root", "data"}, []string{"root", "data"}, false},
		// A CD-ROM's media comes and goes; its drive stays.
		{"media inserted into an empty CD-ROM", specOf([]virtv1.Volume{root, hot}, scsiDisk("root"), cdromDisk("hot")), specOf([]virtv1.Volume{root}, scsiDisk("root"), cdromDisk("hot")), nil,
			[]string{"root", "hot"}, []string{"root", "hot"}, true},
		{"media ejected, the drive stays", specOf([]virtv1.Volume{root}, scsiDisk("root"), cdromDisk("hot")), specOf([]virtv1.Volume{root, hot}, scsiDisk("root"), cdromDisk("hot")), nil,
			[]string{"root"}, []string{"root", "hot"}, true},
		{"a CD-ROM gone from the template goes", specOf([]virtv1.Volume{root}, scsiDisk("root")), specOf([]virtv1.Volume{root}, scsiDisk("root"), cdromDisk("hot")), nil,
			[]string{"root"}, []string{"root"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			vols, disks, changed := spec.DeclaredHotplug(&c.template, &c.vmi, c.statuses)
			var vn, dn []string
			for _, v := range vols {
				vn = append(vn, v.Name)
			}
			for _, d := range disks {
				dn = append(dn, d.Name)
			}
			if d := cmp.Diff(c.wantVols, vn); d != "" {
				t.Errorf("volumes (-want +got):\n%s", d)
			}
			if d := cmp.Diff(c.wantDisks, dn); d != "" {
				t.Errorf("disks (-want +got):\n%s", d)
			}
			if changed != c.changed {
				t.Errorf("changed %v, want %v", changed, c.changed)
			}
		})
	}
	// The added volume is the template's, claim and all.
	vols, _, _ := spec.DeclaredHotplug(&virtv1.VirtualMachineInstanceSpec{Volumes: []virtv1.Volume{hot2}}, &virtv1.VirtualMachineInstanceSpec{}, nil)
	if d := cmp.Diff([]virtv1.Volume{hot2}, vols); d != "" {
		t.Errorf("added volume (-want +got):\n%s", d)
	}
}

func cdromDisk(name string) virtv1.Disk {
	return virtv1.Disk{Name: name, DiskDevice: virtv1.DiskDevice{CDRom: &virtv1.CDRomTarget{Bus: virtv1.DiskBusSCSI}}}
}
