package requests

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

func TestVolume(t *testing.T) {
	pvc := func(name, claim string, hot bool) virtv1.Volume {
		return virtv1.Volume{Name: name, VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}, Hotpluggable: hot}}}
	}
	disk := func(name string) virtv1.Disk { return virtv1.Disk{Name: name} }
	spec := virtv1.VirtualMachineInstanceSpec{
		Volumes: []virtv1.Volume{pvc("root", "root-pvc", false), pvc("hot", "hot-pvc", true)},
		Domain:  virtv1.DomainSpec{Devices: virtv1.Devices{Disks: []virtv1.Disk{disk("root"), disk("hot")}}},
	}
	add := func(name, claim string) Volume {
		return Volume{Add: &virtv1.AddVolumeOptions{Name: name, Disk: &virtv1.Disk{},
			VolumeSource: &virtv1.HotplugVolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
				PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}, Hotpluggable: true}}}}
	}
	remove := func(name string) Volume { return Volume{Remove: &virtv1.RemoveVolumeOptions{Name: name}} }
	cases := []struct {
		name    string
		req     Volume
		err     string
		volumes []string
		disks   []string
	}{
		{"add", add("new", "new-pvc"), "", []string{"root", "hot", "new"}, []string{"root", "hot", "new"}},
		{"add an existing name", add("hot", "other"), "Unable to add volume [hot] because volume with that name already exists", nil, nil},
		{"add an existing claim", add("other", "hot-pvc"), "Unable to add volume source [hot-pvc] because it already exists", nil, nil},
		{"remove by name", remove("hot"), "", []string{"root"}, []string{"root"}},
		{"remove by claim", remove("hot-pvc"), "", []string{"root"}, []string{"root"}},
		{"remove a volume that is not hotpluggable", remove("root"), "Unable to remove volume [root] because it is not hotpluggable", nil, nil},
		{"remove a missing volume", remove("nope"), "Unable to remove volume [nope] because it does not exist", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.req.Verify(spec.Volumes); got != c.err {
				t.Fatalf("Verify: %q, want %q", got, c.err)
			}
			if c.err != "" {
				return
			}
			out := c.req.Apply(&spec)
			var vols, disks []string
			for _, v := range out.Volumes {
				vols = append(vols, v.Name)
			}
			for _, d := range out.Domain.Devices.Disks {
				disks = append(disks, d.Name)
			}
			if diff := cmp.Diff([]any{c.volumes, c.disks}, []any{vols, disks}); diff != "" {
				t.Errorf("volumes, disks (-want +got):\n%s", diff)
			}
			if len(spec.Volumes) != 2 || len(spec.Domain.Devices.Disks) != 2 {
				t.Errorf("Apply changed its input: %+v", spec)
			}
		})
	}
}
