package snapshot

import (
	"errors"
	"fmt"
	"sort"

	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/storage/backendstorage"
)

// Facts are what [PlanVolumes] reads of the cluster.
type Facts struct {
	// Claims are the claims of the VM's namespace, by name.
	Claims map[string]*corev1.PersistentVolumeClaim
	// StorageClasses are the cluster's StorageClasses, by name.
	StorageClasses map[string]*storagev1.StorageClass
	// SnapshotClasses are the cluster's VolumeSnapshotClasses.
	SnapshotClasses []volumesnapshotv1.VolumeSnapshotClass
}

// Volume is a volume of a VM that a snapshot copies.
type Volume struct {
	// Name is the VM's volume.
	Name string
	// Claim is the claim behind it.
	Claim string
	// SnapshotClass is the VolumeSnapshotClass of its copy.
	SnapshotClass string
}

// Excluded is a volume of a VM that a snapshot leaves out, and why.
type Excluded struct {
	Name   string
	Reason string
}

// Plan is what a snapshot of a VM does with each of its volumes, in the
// VM's order.
type Plan struct {
	Included []Volume
	Excluded []Excluded
}

// IncludedNames and ExcludedNames are the plan's volume names, for a
// snapshot's status.snapshotVolumes.
func (p Plan) IncludedNames() []string {
	var out []string
	for _, v := range p.Included {
		out = append(out, v.Name)
	}
	return out
}

// ExcludedNames: see IncludedNames.
func (p Plan) ExcludedNames() []string {
	var out []string
	for _, v := range p.Excluded {
		out = append(out, v.Name)
	}
	return out
}

// ErrNotReady marks a plan that cannot be made yet: a claim of the VM is
// missing, not bound or being deleted. A snapshot waits for it, as
// KubeVirt's does.
var ErrNotReady = errors.New("not ready")

// PlanVolumes says what a snapshot of vm does with each volume of its
// template: a persistentVolumeClaim, dataVolume or memoryDump volume's
// claim is copied by a VolumeSnapshot; every other kind is left out,
// with the reason. A VM with backend storage (persistent EFI variables or
// vTPM) has its backend-storage claim copied too, as a last volume named
// backendstorage.SnapshotVolumeName, as KubeVirt's snapshots do; left out
// when its class cannot be snapshotted or when it does not exist (the VM
// never started, so it keeps no state; KubeVirt's snapshot waits for it
// instead, until its deadline). A claim that cannot be copied (no StorageClass, or no
// VolumeSnapshotClass for its class's driver) is a *field.Error naming
// the volume and the claim; a claim that is not there and bound yet is an
// error wrapping ErrNotReady.
func PlanVolumes(vm *virtv1.VirtualMachine, f Facts) (Plan, error) {
	var p Plan
	if vm.Spec.Template == nil {
		return p, nil
	}
	path := field.NewPath("spec", "template", "spec", "volumes")
	vols := vm.Spec.Template.Spec.Volumes
	state, needed := stateVolume(vm, f)
	if needed && state == nil {
		p.Excluded = append(p.Excluded, Excluded{Name: backendstorage.SnapshotVolumeName(vm.Name),
			Reason: "backend storage (EFI variables, vTPM): the VM has no backend-storage claim: it never started, so it keeps no state yet"})
	}
	if state != nil {
		vols = append(vols[:len(vols):len(vols)], *state)
	}
	for i, v := range vols {
		claim := ClaimOf(v)
		if claim == "" {
			p.Excluded = append(p.Excluded, Excluded{Name: v.Name, Reason: fmt.Sprintf("a %s volume holds no claim: it is not snapshotted", kindOf(v))})
			continue
		}
		pvc, ok := f.Claims[claim]
		switch {
		case !ok:
			return p, fmt.Errorf("volume %q: claim %q does not exist: %w", v.Name, claim, ErrNotReady)
		case pvc.DeletionTimestamp != nil:
			return p, fmt.Errorf("volume %q: claim %q is being deleted: %w", v.Name, claim, ErrNotReady)
		case pvc.Status.Phase != corev1.ClaimBound:
			return p, fmt.Errorf("volume %q: claim %q is not bound (%s): %w", v.Name, claim, pvc.Status.Phase, ErrNotReady)
		}
		var class string
		var err error
		if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName == "" {
			err = fmt.Errorf("claim %q has no StorageClass, so no VolumeSnapshotClass can copy it", claim)
		} else if class, err = SnapshotClassFor(*pvc.Spec.StorageClassName, f); err != nil {
			err = fmt.Errorf("claim %q: %w", claim, err)
		}
		switch {
		case err != nil && state != nil && v.Name == state.Name:
			// As KubeVirt's: a VM whose state's class cannot be
			// snapshotted is snapshotted without it.
			p.Excluded = append(p.Excluded, Excluded{Name: v.Name, Reason: fmt.Sprintf("backend storage (EFI variables, vTPM): %v: it is not snapshotted", err)})
			continue
		case err != nil:
			return p, field.Invalid(path.Index(i), v.Name, err.Error())
		}
		p.Included = append(p.Included, Volume{Name: v.Name, Claim: claim, SnapshotClass: class})
	}
	return p, nil
}

// ClaimOf is the claim behind a volume that a snapshot copies (a
// persistentVolumeClaim, dataVolume or memoryDump volume's), "" for a
// volume with none.
func ClaimOf(v virtv1.Volume) string {
	switch {
	case v.PersistentVolumeClaim != nil:
		return v.PersistentVolumeClaim.ClaimName
	case v.DataVolume != nil:
		return v.DataVolume.Name
	case v.MemoryDump != nil:
		return v.MemoryDump.ClaimName
	}
	return ""
}

// kindOf names a volume's source as the API spells it.
func kindOf(v virtv1.Volume) string {
	s := v.VolumeSource
	for _, k := range []struct {
		set  bool
		name string
	}{
		{s.ContainerDisk != nil, "containerDisk"}, {s.HostDisk != nil, "hostDisk"}, {s.Ephemeral != nil, "ephemeral"},
		{s.EmptyDisk != nil, "emptyDisk"}, {s.CloudInitNoCloud != nil, "cloudInitNoCloud"}, {s.CloudInitConfigDrive != nil, "cloudInitConfigDrive"},
		{s.ConfigMap != nil, "configMap"}, {s.Secret != nil, "secret"}, {s.ServiceAccount != nil, "serviceAccount"},
		{s.DownwardAPI != nil, "downwardAPI"}, {s.DownwardMetrics != nil, "downwardMetrics"}, {s.Sysprep != nil, "sysprep"},
	} {
		if k.set {
			return k.name
		}
	}
	return "source-less"
}

// SnapshotClassFor is the VolumeSnapshotClass that copies claims of the
// StorageClass class, as KubeVirt picks it: the one class whose driver is
// the StorageClass's provisioner, or, of several, the one marked the
// default.
func SnapshotClassFor(class string, f Facts) (string, error) {
	sc, ok := f.StorageClasses[class]
	if !ok {
		return "", fmt.Errorf("StorageClass %q does not exist", class)
	}
	var matches []volumesnapshotv1.VolumeSnapshotClass
	for _, c := range f.SnapshotClasses {
		if c.Driver == sc.Provisioner {
			matches = append(matches, c)
		}
	}
	sort.Slice(matches, func(i, j int) bool { return matches[i].Name < matches[j].Name })
	switch len(matches) {
	case 0:
		return "", fmt.Errorf("no VolumeSnapshotClass for StorageClass %q (driver %s): its volumes cannot be snapshotted", class, sc.Provisioner)
	case 1:
		return matches[0].Name, nil
	}
	for _, c := range matches {
		if c.Annotations[defaultSnapshotClassAnnotation] == "true" {
			return c.Name, nil
		}
	}
	return "", fmt.Errorf("%d VolumeSnapshotClasses for StorageClass %q (driver %s) and none is the default", len(matches), class, sc.Provisioner)
}

// defaultSnapshotClassAnnotation marks the default VolumeSnapshotClass.
const defaultSnapshotClassAnnotation = "snapshot.storage.kubernetes.io/is-default-class"

// stateVolume is the volume that stands for vm's backend-storage claim
// (backendstorage.SnapshotVolumeName, a persistentVolumeClaim volume of
// the claim, as KubeVirt enumerates it); needed says whether vm has
// backend storage at all. A VM that has it but never started has no
// claim yet: nil, true.
func stateVolume(vm *virtv1.VirtualMachine, f Facts) (v *virtv1.Volume, needed bool) {
	if vm.Spec.Template == nil || !backendstorage.Needed(&vm.Spec.Template.Spec) {
		return nil, false
	}
	claims := make([]corev1.PersistentVolumeClaim, 0, len(f.Claims))
	for _, c := range f.Claims {
		claims = append(claims, *c)
	}
	sort.Slice(claims, func(i, j int) bool { return claims[i].Name < claims[j].Name })
	c := backendstorage.FindFor(claims, vm.Namespace, vm.Name)
	if c == nil {
		return nil, true
	}
	return &virtv1.Volume{Name: backendstorage.SnapshotVolumeName(vm.Name), VolumeSource: virtv1.VolumeSource{
		PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name}}}}, true
}
