package admission

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

// A running VMI's volume may move to another claim only as its volume
// migration says: to the destination, or back to the source.
func TestLiveChangesVolumeMigration(t *testing.T) {
	claim := func(name string) virtv1.Volume {
		return virtv1.Volume{Name: "data", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}}
	}
	specWith := func(v virtv1.Volume) *virtv1.VirtualMachineInstanceSpec {
		return &virtv1.VirtualMachineInstanceSpec{Volumes: []virtv1.Volume{v}, Domain: virtv1.DomainSpec{Devices: virtv1.Devices{Disks: []virtv1.Disk{{Name: "data"}}}}}
	}
	migrating := []virtv1.StorageMigratedVolumeInfo{{VolumeName: "data",
		SourcePVCInfo: &virtv1.PersistentVolumeClaimInfo{ClaimName: "old"}, DestinationPVCInfo: &virtv1.PersistentVolumeClaimInfo{ClaimName: "new"}}}
	readOnly := claim("new")
	readOnly.PersistentVolumeClaim.ReadOnly = true
	tests := []struct {
		name      string
		from, to  virtv1.Volume
		migrating []virtv1.StorageMigratedVolumeInfo
		ok        bool
	}{
		{"to the destination", claim("old"), claim("new"), migrating, true},
		{"back to the source", claim("new"), claim("old"), migrating, true},
		{"to another claim", claim("old"), claim("other"), migrating, false},
		{"without a volume migration", claim("old"), claim("new"), nil, false},
		{"with another change of the volume", claim("old"), readOnly, migrating, false},
		{"to a claim of another kind of source", claim("old"), virtv1.Volume{Name: "data", VolumeSource: virtv1.VolumeSource{
			EmptyDisk: &virtv1.EmptyDiskSource{}}}, migrating, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := liveChanges(specWith(tt.from), specWith(tt.to), tt.migrating)
			if ok := len(errs) == 0; ok != tt.ok {
				t.Errorf("allowed %v, want %v: %v", ok, tt.ok, errs.ToAggregate())
			}
			if !tt.ok && len(errs) > 0 && errs[0].Field != "spec.volumes[0]" {
				t.Errorf("refused at %s, want spec.volumes[0]", errs[0].Field)
			}
		})
	}
}
