package backendstorage

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
)

func TestNeeded(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec virtv1.VirtualMachineInstanceSpec
		efi  bool
		tpm  bool
	}{
		{name: "neither"},
		{name: "EFI not persistent", spec: withEFI(nil)},
		{name: "persistent EFI", spec: withEFI(ptr.To(true)), efi: true},
		{name: "persistent TPM", spec: withTPM(nil, ptr.To(true)), tpm: true},
		{name: "a disabled persistent TPM", spec: withTPM(ptr.To(false), ptr.To(true))},
		{name: "TPM not persistent", spec: withTPM(nil, ptr.To(false))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PersistentEFI(&tc.spec); got != tc.efi {
				t.Errorf("PersistentEFI = %v, want %v", got, tc.efi)
			}
			if got := PersistentTPM(&tc.spec); got != tc.tpm {
				t.Errorf("PersistentTPM = %v, want %v", got, tc.tpm)
			}
			if got := Needed(&tc.spec); got != (tc.efi || tc.tpm) {
				t.Errorf("Needed = %v", got)
			}
		})
	}
}

func withEFI(persistent *bool) virtv1.VirtualMachineInstanceSpec {
	return virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{Firmware: &virtv1.Firmware{
		Bootloader: &virtv1.Bootloader{EFI: &virtv1.EFI{Persistent: persistent}}}}}
}

func withTPM(enabled, persistent *bool) virtv1.VirtualMachineInstanceSpec {
	return virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{Devices: virtv1.Devices{
		TPM: &virtv1.TPMDevice{Enabled: enabled, Persistent: persistent}}}}
}

func class(name, ann string) storagev1.StorageClass {
	c := storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if ann != "" {
		c.Annotations = map[string]string{ann: "true"}
	}
	return c
}

func TestClass(t *testing.T) {
	plain, def, virt := class("plain", ""), class("default", annDefaultClass), class("virt", annDefaultVirtClass)
	for _, tc := range []struct {
		name       string
		configured string
		classes    []storagev1.StorageClass
		want       string
	}{
		{name: "configured wins", configured: "chosen", classes: []storagev1.StorageClass{def, virt}, want: "chosen"},
		{name: "the default for VMs before the cluster's", classes: []storagev1.StorageClass{def, virt, plain}, want: "virt"},
		{name: "the cluster's default", classes: []storagev1.StorageClass{plain, def}, want: "default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Class(tc.configured, tc.classes)
			if err != nil || got != tc.want {
				t.Errorf("Class = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := Class("", []storagev1.StorageClass{plain}); err == nil {
		t.Error("no default class: no error")
	}
}

func TestAccessMode(t *testing.T) {
	fs, block := corev1.PersistentVolumeFilesystem, corev1.PersistentVolumeBlock
	profile := func(sets ...cdiv1.ClaimPropertySet) *cdiv1.StorageProfile {
		return &cdiv1.StorageProfile{Status: cdiv1.StorageProfileStatus{ClaimPropertySets: sets}}
	}
	rwx := cdiv1.ClaimPropertySet{VolumeMode: &fs, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadWriteMany}}
	rwo := cdiv1.ClaimPropertySet{VolumeMode: &fs, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}
	blockRWX := cdiv1.ClaimPropertySet{VolumeMode: &block, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}}
	for _, tc := range []struct {
		name       string
		configured bool
		profile    *cdiv1.StorageProfile
		want       corev1.PersistentVolumeAccessMode
	}{
		{name: "no profile, configured class", configured: true, want: corev1.ReadWriteMany},
		{name: "no profile, default class", want: corev1.ReadWriteOnce},
		{name: "profile offers RWX", profile: profile(rwx), want: corev1.ReadWriteMany},
		{name: "profile offers RWO only", configured: true, profile: profile(rwo), want: corev1.ReadWriteOnce},
		{name: "RWX for block only", profile: profile(blockRWX), want: corev1.ReadWriteOnce},
		{name: "profile says nothing", configured: true, profile: profile(), want: corev1.ReadWriteMany},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AccessMode(tc.configured, tc.profile); got != tc.want {
				t.Errorf("AccessMode = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestClaimAndFind(t *testing.T) {
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm", UID: "vmi-uid",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "vm", UID: "vm-uid", Controller: ptr.To(true)}}}}
	c := Claim(vmi, "local", corev1.ReadWriteMany)
	if d := cmp.Diff(vmi.OwnerReferences, c.OwnerReferences); d != "" {
		t.Errorf("owners (-VMI's +claim's):\n%s", d)
	}
	if c.GenerateName != "persistent-state-for-vm-" || c.Labels[LabelVM] != "vm" || *c.Spec.StorageClassName != "local" {
		t.Errorf("claim %s, labels %v, class %v", c.GenerateName, c.Labels, c.Spec.StorageClassName)
	}
	if got := c.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != Size {
		t.Errorf("size %s, want %s", got.String(), Size)
	}
	bare := vmi.DeepCopy()
	bare.OwnerReferences = nil
	if o := Claim(bare, "", corev1.ReadWriteOnce).OwnerReferences; len(o) != 1 || o[0].UID != "vmi-uid" {
		t.Errorf("a VMI without owners: owners %+v, want the VMI", o)
	}

	labelled := *c.DeepCopy()
	labelled.Name = "persistent-state-for-vm-abcde"
	legacy := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "persistent-state-for-vm"}}
	other := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x", Labels: map[string]string{LabelVM: "other"}}}
	gone := *labelled.DeepCopy()
	gone.Name, gone.DeletionTimestamp = "being-deleted", &metav1.Time{}
	for _, tc := range []struct {
		name   string
		claims []corev1.PersistentVolumeClaim
		want   string
	}{
		{name: "none", claims: []corev1.PersistentVolumeClaim{other}},
		{name: "labelled before legacy", claims: []corev1.PersistentVolumeClaim{legacy, labelled}, want: labelled.Name},
		{name: "legacy name", claims: []corev1.PersistentVolumeClaim{other, legacy}, want: legacy.Name},
		{name: "being deleted", claims: []corev1.PersistentVolumeClaim{gone}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if f := Find(tc.claims, vmi); f != nil {
				got = f.Name
			}
			if got != tc.want {
				t.Errorf("Find = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestVolumeStatus(t *testing.T) {
	st := &virtv1.VirtualMachineInstanceStatus{VolumeStatus: []virtv1.VolumeStatus{{Name: "rootdisk"}}}
	if ClaimName(st) != "" {
		t.Fatal("a claim named before any was set")
	}
	if !SetVolumeStatus(st, "persistent-state-for-vm-a") || ClaimName(st) != "persistent-state-for-vm-a" {
		t.Fatalf("after setting: %+v", st.VolumeStatus)
	}
	if SetVolumeStatus(st, "persistent-state-for-vm-a") {
		t.Error("setting the same claim again changed the status")
	}
	if !SetVolumeStatus(st, "persistent-state-for-vm-b") || ClaimName(st) != "persistent-state-for-vm-b" || len(st.VolumeStatus) != 2 {
		t.Errorf("after replacing: %+v", st.VolumeStatus)
	}
}

func TestMigrationClaims(t *testing.T) {
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm", UID: "vmi-uid"}}
	target := ForMigration(Claim(vmi, "local", corev1.ReadWriteMany), "mig-1")
	if d := cmp.Diff(map[string]string{LabelMigration: "mig-1"}, target.Labels); d != "" {
		t.Errorf("labels of the target's claim (-want +got):\n%s", d)
	}
	target.Name = "persistent-state-for-vm-tgt"
	if f := Find([]corev1.PersistentVolumeClaim{*target}, vmi); f != nil {
		t.Errorf("Find found the target's claim %s before the handoff", f.Name)
	}
	gone := *target.DeepCopy()
	gone.Name, gone.DeletionTimestamp = "being-deleted", &metav1.Time{}
	other := *target.DeepCopy()
	other.Name, other.Labels = "other", map[string]string{LabelMigration: "mig-2"}
	for _, tc := range []struct {
		name   string
		claims []corev1.PersistentVolumeClaim
		want   string
	}{
		{name: "none", claims: []corev1.PersistentVolumeClaim{other}},
		{name: "this migration's", claims: []corev1.PersistentVolumeClaim{other, gone, *target}, want: target.Name},
		{name: "being deleted", claims: []corev1.PersistentVolumeClaim{gone}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if f := FindMigration(tc.claims, "mig-1"); f != nil {
				got = f.Name
			}
			if got != tc.want {
				t.Errorf("FindMigration = %q, want %q", got, tc.want)
			}
		})
	}

	labels, err := Handoff(target, "vm")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]string{LabelVM: "vm"}, labels); d != "" {
		t.Errorf("labels after the handoff (-want +got):\n%s", d)
	}
	handed := target.DeepCopy()
	handed.Labels = labels
	if f := Find([]corev1.PersistentVolumeClaim{*handed}, vmi); f == nil || f.Name != target.Name {
		t.Errorf("Find after the handoff = %v, want %s", f, target.Name)
	}
	theirs := target.DeepCopy()
	theirs.Labels[LabelVM] = "another-vm"
	if _, err := Handoff(theirs, "vm"); err == nil || !strings.Contains(err.Error(), "metadata.labels[persistent-state-for]") {
		t.Errorf("Handoff of a claim labelled for another VM: %v, want an error naming the label", err)
	}
}

func TestSnapshotVolumeName(t *testing.T) {
	long := strings.Repeat("v", 45)
	longest := strings.Repeat("w", 60)
	for _, tc := range []struct{ vm, want string }{
		{"myvm", "persistent-state-for-myvm"},
		{strings.Repeat("x", 42), "persistent-state-for-" + strings.Repeat("x", 42)},
		// KubeVirt's rule: the prefix cut, an FNV-1a hash of the prefix, the name.
		{long, "persistent-state-for"[:63-10-45] + "-" + fnvOf("persistent-state-for") + "-" + long},
		// A name too long to keep: the prefix and a hash of the whole.
		{longest, "persistent-state-for-" + fnvOf("persistent-state-for-"+longest)},
	} {
		got := SnapshotVolumeName(tc.vm)
		if got != tc.want || len(got) > 63 {
			t.Errorf("SnapshotVolumeName(%q) = %q (%d), want %q", tc.vm, got, len(got), tc.want)
		}
	}
}

// fnvOf is the FNV-1a hash of s in hex, computed apart from the code under test.
func fnvOf(s string) string {
	var h uint32 = 2166136261
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return fmt.Sprintf("%08x", h)
}

func TestWithoutIdentityAndFindFor(t *testing.T) {
	in := map[string]string{LabelVM: "vm", LabelMigration: "m", "app": "db"}
	if d := cmp.Diff(map[string]string{"app": "db"}, WithoutIdentity(in)); d != "" || len(in) != 3 {
		t.Errorf("WithoutIdentity (-want +got):\n%s (input changed: %v)", d, in)
	}
	if WithoutIdentity(nil) != nil {
		t.Error("WithoutIdentity(nil) is not nil")
	}
	c := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "persistent-state-for-vm-a", Labels: map[string]string{LabelVM: "vm"}}}
	if f := FindFor([]corev1.PersistentVolumeClaim{c}, "ns", "vm"); f == nil || f.Name != c.Name {
		t.Errorf("FindFor = %v", f)
	}
	if f := FindFor([]corev1.PersistentVolumeClaim{c}, "other", "vm"); f != nil {
		t.Errorf("FindFor in another namespace = %s", f.Name)
	}
}
