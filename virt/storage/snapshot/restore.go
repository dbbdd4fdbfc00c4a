package snapshot

import (
	"encoding/json"
	"fmt"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"

	"github.com/virtkit/virtkit/virt/storage/backendstorage"
	"github.com/virtkit/virtkit/virt/storage/dvspec"
)

// RestorePlan is what a restore makes and writes.
type RestorePlan struct {
	// Claims are the claims to create, each with its backup's
	// VolumeSnapshot as its data source.
	Claims []*corev1.PersistentVolumeClaim
	// Restores are the restore's status.restores.
	Restores []vmsnapshotv1.VolumeRestore
	// VM is the target VM as it is to be: to create when there was none,
	// else to write over the existing one (its metadata kept).
	VM *virtv1.VirtualMachine
	// StateClaim is the claim of Claims restored from the VM's backend
	// storage (EFI variables, vTPM), "" when the content has none. It is
	// made without the backend-storage label; once the VM is written, it
	// becomes the target VM's backend-storage claim in place of the one it
	// had (backendstorage.LabelVM).
	StateClaim string
}

// restoreAnnotationPrefixes are the annotations of a backed-up claim a
// restored claim does not take: they describe the old claim's binding and
// filling, not the new one's.
var restoreAnnotationPrefixes = []string{"pv.kubernetes.io", "volume.beta.kubernetes.io", "cdi.kubevirt.io",
	"volume.kubernetes.io", "k8s.io/CloneRequest", "k8s.io/CloneOf"}

// PlanRestore says what restore does with content, onto target (nil when
// the VM restore.spec.target names does not exist: it is made, halted).
// Each backup gets a claim from its VolumeSnapshot, named as KubeVirt
// names it (restore-<restore UID>-<volume>, or <target>-<volume> with the
// PrefixTargetName policy, or the backed-up claim's own name with InPlace,
// or the name a volumeRestoreOverride gives); the VM's claim and
// DataVolume volumes are pointed at those claims (a DataVolume volume
// becomes a persistentVolumeClaim volume and its dataVolumeTemplate goes:
// the data is there, nothing is to import), but for a DataVolume whose
// claim is restored under its own name (InPlace), which keeps its volume
// and takes the claim back, marked filled for it. An
// existing target keeps its run strategy; a new one gets the restore's
// JSON patches. The backup of the VM's backend storage
// (backendstorage.SnapshotVolumeName) is restored as the others are, and
// named in StateClaim, unless WithoutBackendStorage.
func PlanRestore(restore *vmsnapshotv1.VirtualMachineRestore, content *vmsnapshotv1.VirtualMachineSnapshotContent, target *virtv1.VirtualMachine, opts ...RestoreOption) (RestorePlan, error) {
	var p RestorePlan
	var o restoreOptions
	for _, opt := range opts {
		opt(&o)
	}
	src := content.Spec.Source.VirtualMachine
	if src == nil {
		return p, fmt.Errorf("VirtualMachineSnapshotContent %s holds no VirtualMachine", content.Name)
	}
	dataVolumeOf := map[string]string{}
	if src.Spec.Template != nil {
		for _, v := range src.Spec.Template.Spec.Volumes {
			if v.DataVolume != nil {
				dataVolumeOf[v.Name] = v.DataVolume.Name
			}
		}
	}
	stateVolume := ""
	if src.Spec.Template != nil && backendstorage.Needed(&src.Spec.Template.Spec) {
		stateVolume = backendstorage.SnapshotVolumeName(src.Name)
	}
	claimOfVolume := map[string]string{}
	for _, b := range content.Spec.VolumeBackups {
		if b.VolumeSnapshotName == nil {
			continue
		}
		if b.VolumeName == stateVolume && stateVolume != "" && o.withoutState {
			continue
		}
		name := restoreClaimName(restore, b)
		if b.VolumeName == stateVolume && stateVolume != "" {
			p.StateClaim = name
		}
		claimOfVolume[b.VolumeName] = name
		pvc := restoredClaim(restore, b, name)
		if dv := dataVolumeOf[b.VolumeName]; dv != "" && dv == name {
			// Its DataVolume takes it back, filled (the restore
			// controller makes the DataVolume its controller).
			setAnnotation(&pvc.ObjectMeta, dvspec.AnnPopulatedFor, dv)
		}
		p.Claims = append(p.Claims, pvc)
		p.Restores = append(p.Restores, vmsnapshotv1.VolumeRestore{VolumeName: b.VolumeName,
			PersistentVolumeClaimName: name, VolumeSnapshotName: *b.VolumeSnapshotName})
	}

	spec := src.Spec.DeepCopy()
	var templates []virtv1.DataVolumeTemplateSpec
	dropped := map[string]bool{}
	if spec.Template != nil {
		for i := range spec.Template.Spec.Volumes {
			v := &spec.Template.Spec.Volumes[i]
			claim, ok := claimOfVolume[v.Name]
			if !ok || (v.DataVolume != nil && v.DataVolume.Name == claim) {
				// In place, a DataVolume's claim keeps its name: the
				// volume and its template stay.
				continue
			}
			if v.DataVolume != nil {
				dropped[v.DataVolume.Name] = true
			}
			v.VolumeSource = virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
				PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
		}
	}
	for _, t := range spec.DataVolumeTemplates {
		if !dropped[t.Name] {
			templates = append(templates, t)
		}
	}
	spec.DataVolumeTemplates = templates

	if target == nil {
		vm := &virtv1.VirtualMachine{
			TypeMeta:   metav1.TypeMeta{APIVersion: virtv1.GroupVersion.String(), Kind: "VirtualMachine"},
			ObjectMeta: metav1.ObjectMeta{Name: restore.Spec.Target.Name, Namespace: restore.Namespace, Labels: src.Labels, Annotations: src.Annotations},
			Spec:       *spec,
		}
		if vm.Spec.Running != nil {
			vm.Spec.Running = ptr.To(false)
		} else {
			vm.Spec.RunStrategy = ptr.To(virtv1.RunStrategyHalted)
		}
		setAnnotation(&vm.ObjectMeta, LastRestoreAnnotation, string(restore.UID))
		patched, err := ApplyPatches(vm, restore.Spec.Patches)
		if err != nil {
			return p, err
		}
		p.VM = patched
		return p, nil
	}
	vm := target.DeepCopy()
	running, strategy := target.Spec.Running, target.Spec.RunStrategy
	vm.Spec = *spec
	vm.Spec.Running, vm.Spec.RunStrategy = running, strategy
	setAnnotation(&vm.ObjectMeta, LastRestoreAnnotation, string(restore.UID))
	p.VM = vm
	return p, nil
}

// RestoreOption changes what PlanRestore plans.
type RestoreOption func(*restoreOptions)

type restoreOptions struct {
	withoutState bool
}

// WithoutBackendStorage leaves the VM's backend storage (EFI variables,
// vTPM) out of the restore: its target starts with fresh state, as a
// clone of a VM does.
func WithoutBackendStorage() RestoreOption {
	return func(o *restoreOptions) { o.withoutState = true }
}

// IsInPlace says whether restore replaces the snapshotted claims under
// their own names (volumeRestorePolicy InPlace): the claims of those names
// are deleted first.
func IsInPlace(restore *vmsnapshotv1.VirtualMachineRestore) bool {
	return ptr.Deref(restore.Spec.VolumeRestorePolicy, "") == vmsnapshotv1.VolumeRestorePolicyInPlace
}

// restoreClaimName is the name of the claim restore makes for backup b.
func restoreClaimName(restore *vmsnapshotv1.VirtualMachineRestore, b vmsnapshotv1.VolumeBackup) string {
	volume := b.VolumeName
	for _, o := range restore.Spec.VolumeRestoreOverrides {
		if o.VolumeName == volume && o.RestoreName != "" {
			return o.RestoreName
		}
	}
	if IsInPlace(restore) {
		return b.PersistentVolumeClaim.Name
	}
	if pol := restore.Spec.VolumeRestorePolicy; pol != nil && *pol == vmsnapshotv1.VolumeRestorePolicyPrefixTargetName {
		name := restore.Spec.Target.Name + "-" + volume
		if len(name) > 63 {
			name = name[:63]
		}
		return strings.TrimRight(name, "-")
	}
	return defaultRestoreClaimName(restore.UID, volume)
}

// ClaimFromBackup is a new claim namespace/name filled from backup b's
// VolumeSnapshot: the backed-up claim's spec (its volume unbound), labels
// (but those that make a claim a VM's backend storage: a copy is not the
// VM's) and annotations (but those of CDI and of the PV binding, which
// describe the old claim's filling and binding), with the VolumeSnapshot
// as data source. A restore and an export of a snapshot make their claims so.
func ClaimFromBackup(b vmsnapshotv1.VolumeBackup, namespace, name string) *corev1.PersistentVolumeClaim {
	old := b.PersistentVolumeClaim
	pvc := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: backendstorage.WithoutIdentity(old.Labels)},
		Spec:       *old.Spec.DeepCopy(),
	}
	for k, v := range old.Annotations {
		keep := true
		for _, p := range restoreAnnotationPrefixes {
			keep = keep && !strings.HasPrefix(k, p)
		}
		if keep {
			setAnnotation(&pvc.ObjectMeta, k, v)
		}
	}
	pvc.Spec.VolumeName = ""
	pvc.Spec.DataSourceRef = nil
	ds := VolumeSnapshotSource(ptr.Deref(b.VolumeSnapshotName, ""))
	pvc.Spec.DataSource = &ds
	return pvc
}

// restoredClaim is the claim made for backup b, named name.
func restoredClaim(restore *vmsnapshotv1.VirtualMachineRestore, b vmsnapshotv1.VolumeBackup, name string) *corev1.PersistentVolumeClaim {
	pvc := ClaimFromBackup(b, restore.Namespace, name)
	setAnnotation(&pvc.ObjectMeta, RestoreNameAnnotation, restore.Name)
	for _, o := range restore.Spec.VolumeRestoreOverrides {
		if o.VolumeName != b.VolumeName {
			continue
		}
		for k, v := range o.Labels {
			if pvc.Labels == nil {
				pvc.Labels = map[string]string{}
			}
			pvc.Labels[k] = v
		}
		for k, v := range o.Annotations {
			setAnnotation(&pvc.ObjectMeta, k, v)
		}
	}
	return pvc
}

func setAnnotation(m *metav1.ObjectMeta, k, v string) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[k] = v
}

// patchOp is one JSON patch operation of a restore's spec.patches.
type patchOp struct {
	Op   string `json:"op"`
	Path string `json:"path"`
}

// ValidatePatches checks a restore's spec.patches: each a JSON patch
// operation (RFC 6902) on the new VM's spec, labels or annotations.
func ValidatePatches(patches []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, s := range patches {
		var op patchOp
		if err := json.Unmarshal([]byte(s), &op); err != nil {
			errs = append(errs, field.Invalid(path.Index(i), s, "not a JSON patch operation: "+err.Error()))
			continue
		}
		if op.Op == "" {
			errs = append(errs, field.Required(path.Index(i).Child("op"), "a JSON patch operation needs an op"))
		}
		if !strings.HasPrefix(op.Path, "/spec/") && !strings.HasPrefix(op.Path, "/metadata/labels/") && !strings.HasPrefix(op.Path, "/metadata/annotations/") {
			errs = append(errs, field.Invalid(path.Index(i).Child("path"), op.Path, "patching is valid only for elements under /spec/, /metadata/labels/ and /metadata/annotations/"))
		}
	}
	return errs
}

// ApplyPatches applies a restore's spec.patches to vm.
func ApplyPatches(vm *virtv1.VirtualMachine, patches []string) (*virtv1.VirtualMachine, error) {
	if len(patches) == 0 {
		return vm, nil
	}
	if errs := ValidatePatches(patches, field.NewPath("spec", "patches")); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	doc, err := json.Marshal(vm)
	if err != nil {
		return nil, err
	}
	patch, err := jsonpatch.DecodePatch([]byte("[" + strings.Join(patches, ",") + "]"))
	if err != nil {
		return nil, field.Invalid(field.NewPath("spec", "patches"), patches, err.Error())
	}
	out, err := patch.Apply(doc)
	if err != nil {
		return nil, field.Invalid(field.NewPath("spec", "patches"), patches, fmt.Sprintf("applying them to VM %s: %v", vm.Name, err))
	}
	patched := &virtv1.VirtualMachine{}
	if err := json.Unmarshal(out, patched); err != nil {
		return nil, err
	}
	return patched, nil
}
