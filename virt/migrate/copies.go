package migrate

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

// Copying claims during a migration, beyond KubeVirt: a VMI whose disks are
// on ReadWriteOnce claims (node-local storage) can still migrate, its
// claims copied to new ones that the target mounts. The copies carry
// CopyForLabel (the migration's UID) and CopyOfAnnotation (the claim they
// copy) while the migration runs, and the migration owns them: a failed or
// cancelled migration deletes them and the VMI goes on on its claims; a
// successful one keeps them, points the VM at them and drops the marks.
const (
	// CopyForLabel marks a claim a migration made as a copy: its value is
	// the migration's UID.
	CopyForLabel = "virtkit.io/copy-for-migration"
	// CopyOfAnnotation names the claim a copy copies.
	CopyOfAnnotation = "virtkit.io/copy-of"
)

// ClaimsToCopy returns the volumes a migration of vmi must copy to new
// claims, in spec order: its persistentVolumeClaim volumes that are not
// ReadWriteMany, as its volumeStatus reports their claims. ok is false when
// copying them cannot make the VMI migrate: it has none, a hostDisk that is
// not shared, a dataVolume or hotplugged claim that is not ReadWriteMany,
// or a claim whose access modes are not reported yet.
func ClaimsToCopy(vmi *virtv1.VirtualMachineInstance) (volumes []string, ok bool) {
	reported := map[string]*virtv1.PersistentVolumeClaimInfo{}
	for _, vs := range vmi.Status.VolumeStatus {
		reported[vs.Name] = vs.PersistentVolumeClaimInfo
	}
	for i := range vmi.Spec.Volumes {
		v := &vmi.Spec.Volumes[i]
		if h := v.HostDisk; h != nil && (h.Shared == nil || !*h.Shared) {
			return nil, false
		}
		if ClaimOf(v) == "" {
			continue
		}
		info := reported[v.Name]
		if info == nil {
			return nil, false
		}
		if slices.Contains(info.AccessModes, corev1.ReadWriteMany) {
			continue
		}
		if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.Hotpluggable {
			// A DataVolume's claim would outlive the DataVolume's name;
			// a hotplugged claim is not copied (as a volume migration
			// does not move one).
			return nil, false
		}
		volumes = append(volumes, v.Name)
	}
	return volumes, len(volumes) > 0
}

// CopyName is the name of the copy of claim a migration (by its UID) makes:
// the claim's name and the UID's first eight characters, cut to fit a
// claim's name.
func CopyName(claim string, migration string) string {
	suffix := "-" + strings.ReplaceAll(migration, "-", "")
	if len(suffix) > 9 {
		suffix = suffix[:9]
	}
	if max := 253 - len(suffix); len(claim) > max {
		claim = strings.TrimRight(claim[:max], "-.")
	}
	return claim + suffix
}

// CopyClaim returns the claim a migration creates to copy src into: as
// large as src (its capacity, else its request), of its access modes,
// storage class and volume mode, empty, owned by the migration and marked
// as its copy.
func CopyClaim(src *corev1.PersistentVolumeClaim, mig *virtv1.VirtualMachineInstanceMigration) *corev1.PersistentVolumeClaim {
	size, ok := src.Status.Capacity[corev1.ResourceStorage]
	if !ok {
		size = src.Spec.Resources.Requests[corev1.ResourceStorage]
	}
	yes := true
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: CopyName(src.Name, string(mig.UID)), Namespace: src.Namespace,
			Labels:      map[string]string{CopyForLabel: string(mig.UID)},
			Annotations: map[string]string{CopyOfAnnotation: src.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: virtv1.SchemeGroupVersion.String(), Kind: "VirtualMachineInstanceMigration",
				Name: mig.Name, UID: mig.UID, BlockOwnerDeletion: &yes}},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      slices.Clone(src.Spec.AccessModes),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size.DeepCopy()}},
			StorageClassName: src.Spec.StorageClassName,
			VolumeMode:       src.Spec.VolumeMode,
		},
	}
}

// CopiedVolumes returns what a migration copying vmi's volumes into copies
// (the copy of each claim by the claim's name) writes to the VMI: its
// status.migratedVolumes, and its spec.volumes naming the copies.
func CopiedVolumes(vmi *virtv1.VirtualMachineInstance, volumes []string, claims, copies map[string]*corev1.PersistentVolumeClaim) ([]virtv1.StorageMigratedVolumeInfo, []virtv1.Volume) {
	copied := map[string]bool{}
	for _, v := range volumes {
		copied[v] = true
	}
	var migrated []virtv1.StorageMigratedVolumeInfo
	out := make([]virtv1.Volume, len(vmi.Spec.Volumes))
	for i, v := range vmi.Spec.Volumes {
		out[i] = *v.DeepCopy()
		claim := ClaimOf(&v)
		cp := copies[claim]
		if !copied[v.Name] || cp == nil {
			continue
		}
		setClaim(&out[i], cp.Name)
		migrated = append(migrated, virtv1.StorageMigratedVolumeInfo{VolumeName: v.Name,
			SourcePVCInfo: ClaimInfo(claim, claims[claim]), DestinationPVCInfo: ClaimInfo(cp.Name, cp)})
	}
	return migrated, out
}

// RenamedClaims returns vols with each claim renamed as to says (old name:
// new name), and whether any was.
func RenamedClaims(vols []virtv1.Volume, to map[string]string) ([]virtv1.Volume, bool) {
	out := make([]virtv1.Volume, len(vols))
	changed := false
	for i, v := range vols {
		out[i] = *v.DeepCopy()
		if n, ok := to[ClaimOf(&v)]; ok {
			setClaim(&out[i], n)
			changed = true
		}
	}
	return out, changed
}

// setClaim points a claim volume at another claim.
func setClaim(v *virtv1.Volume, claim string) {
	switch {
	case v.PersistentVolumeClaim != nil:
		v.PersistentVolumeClaim.ClaimName = claim
	case v.DataVolume != nil:
		v.DataVolume.Name = claim
	}
}
