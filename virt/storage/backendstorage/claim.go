package backendstorage

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
)

const (
	// Prefix starts every backend-storage claim's name, and is the label
	// whose value names the VM a claim belongs to (KubeVirt's).
	Prefix = "persistent-state-for"
	// LabelVM is the label on a claim whose value is its VM's name.
	LabelVM = Prefix
	// VolumeName is the name of the claim's entry in a VMI's
	// status.volumeStatus, as KubeVirt's.
	VolumeName = Prefix + "-this-vm"
	// Size is what each claim asks for, as KubeVirt's: the TPM's state and
	// the EFI variables take a few hundred KiB.
	Size = "10Mi"
)

// Where each kind of state lives in the claim, as in KubeVirt's.
const (
	// SubPathTPM holds the vTPM's state (swtpm's), one folder per domain
	// UUID.
	SubPathTPM = "swtpm"
	// SubPathTPMCA holds the local CA that signs the vTPM's endorsement
	// key certificate, so the certificate chain stays the same.
	SubPathTPMCA = "swtpm-localca"
	// SubPathNVRAM holds the EFI variable store, <vmi>_VARS.fd.
	SubPathNVRAM = "nvram"
)

// Annotations on storage classes that name the cluster's defaults.
const (
	annDefaultClass     = "storageclass.kubernetes.io/is-default-class"
	annDefaultVirtClass = "storageclass.kubevirt.io/is-default-virt-class"
)

// Class is the storage class of a new claim, as KubeVirt picks it: the
// KubeVirt CR's vmStateStorageClass (configured) when set, else the class
// marked as the default for VMs, else the cluster's default class.
func Class(configured string, classes []storagev1.StorageClass) (string, error) {
	if configured != "" {
		return configured, nil
	}
	var virt, def string
	for _, c := range classes {
		if c.Annotations[annDefaultVirtClass] == "true" {
			virt = c.Name
		}
		if c.Annotations[annDefaultClass] == "true" {
			def = c.Name
		}
	}
	switch {
	case virt != "":
		return virt, nil
	case def != "":
		return def, nil
	}
	return "", fmt.Errorf("backend storage: no storage class: the KubeVirt CR sets no spec.configuration.vmStateStorageClass and no class is the default")
}

// AccessMode is the access mode of a new claim in a class, as KubeVirt
// picks it: ReadWriteMany when the class's StorageProfile (profile, nil
// when there is none) offers it for file systems, ReadWriteOnce when it
// offers only that; without a word from the profile, ReadWriteMany for a
// configured class and ReadWriteOnce for a default one.
func AccessMode(configured bool, profile *cdiv1.StorageProfile) corev1.PersistentVolumeAccessMode {
	mode := corev1.ReadWriteOnce
	if configured {
		mode = corev1.ReadWriteMany
	}
	if profile == nil {
		return mode
	}
	rwo := false
	for _, set := range profile.Status.ClaimPropertySets {
		if set.VolumeMode == nil || *set.VolumeMode != corev1.PersistentVolumeFilesystem {
			continue
		}
		for _, m := range set.AccessModes {
			switch m {
			case corev1.ReadWriteMany:
				return corev1.ReadWriteMany
			case corev1.ReadWriteOnce:
				rwo = true
			}
		}
	}
	if rwo {
		return corev1.ReadWriteOnce
	}
	return mode
}

// Claim is a new backend-storage claim of vmi: named from Prefix and the
// VMI's name with a random suffix (generateName), labelled with LabelVM,
// a file system of Size in class with mode. It is owned by the VMI's
// owners (its VM), so that it outlives the VMI and goes with the VM; a
// VMI without owners owns it itself, as in KubeVirt.
func Claim(vmi *virtv1.VirtualMachineInstance, class string, mode corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
	owners := append([]metav1.OwnerReference(nil), vmi.OwnerReferences...)
	if len(owners) == 0 {
		owners = []metav1.OwnerReference{*metav1.NewControllerRef(vmi, virtv1.VirtualMachineInstanceGroupVersionKind)}
	}
	fs := corev1.PersistentVolumeFilesystem
	c := &corev1.PersistentVolumeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: vmi.Namespace, GenerateName: LegacyName(vmi.Name) + "-",
			Labels:          map[string]string{LabelVM: vmi.Name},
			OwnerReferences: owners,
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{mode},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(Size)}},
			VolumeMode:  &fs,
		},
	}
	if class != "" {
		c.Spec.StorageClassName = &class
	}
	return c
}

// Find is vmi's backend-storage claim among claims (those of its
// namespace), nil when there is none: the one labelled for it, else one
// named Prefix-<vmi> (KubeVirt's older claims, without the label). Claims
// being deleted do not count.
func Find(claims []corev1.PersistentVolumeClaim, vmi *virtv1.VirtualMachineInstance) *corev1.PersistentVolumeClaim {
	var legacy *corev1.PersistentVolumeClaim
	for i := range claims {
		c := &claims[i]
		if c.Namespace != vmi.Namespace || c.DeletionTimestamp != nil {
			continue
		}
		if c.Labels[LabelVM] == vmi.Name {
			return c
		}
		if c.Name == LegacyName(vmi.Name) {
			legacy = c
		}
	}
	return legacy
}

// LegacyName is the name of vm's claim as KubeVirt's older releases made
// it, without a label.
func LegacyName(vm string) string {
	return Prefix + "-" + vm
}

// FindFor is Find for VM namespace/vm, for callers that hold a VM rather
// than a VMI (a snapshot, a restore).
func FindFor(claims []corev1.PersistentVolumeClaim, namespace, vm string) *corev1.PersistentVolumeClaim {
	v := &virtv1.VirtualMachineInstance{}
	v.Namespace, v.Name = namespace, vm
	return Find(claims, v)
}

// WithoutIdentity is labels without the labels that make a claim a VM's
// backend storage or a migration target's (LabelVM, LabelMigration): a
// copy of a claim (restored from a snapshot, exported) must not pass for
// the VM's own claim.
func WithoutIdentity(labels map[string]string) map[string]string {
	if labels == nil {
		return nil
	}
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		if k != LabelVM && k != LabelMigration {
			out[k] = v
		}
	}
	return out
}
