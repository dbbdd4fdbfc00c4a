package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/local/csidriver"
	"github.com/virtkit/virtkit/virt/storage/backendstorage"
)

// readEK is a guest script that asks the vTPM for its endorsement key's
// public part (TPM2_ReadPublic of the persistent handle 0x81010001 that
// swtpm_setup makes when it manufactures the TPM) with raw bytes on
// /dev/tpm0, and prints the answer in hex. The key comes from the TPM's
// primary seed: the same key after a restart is the same TPM.
const readEK = `#!/bin/sh
exec 3<>/dev/tpm0 || { echo "VIRTKIT-TPM-EK none"; exit 1; }
printf '\200\001\000\000\000\016\000\000\001\163\201\001\000\001' >&3
echo "VIRTKIT-TPM-EK $(dd bs=4096 count=1 <&3 2>/dev/null | od -An -tx1 -v | tr -d ' \n')"
exec 3<&-
`

// efiVarGUID is the vendor GUID of the test's EFI variable.
const efiVarGUID = "5649524b-4954-4b49-5456-4d41524b4552"

// keepEFIVar is a guest script, for a guest booted through EFI, that
// writes a random value into the non-volatile EFI variable
// VirtkitMarker (attributes NON_VOLATILE|BOOTSERVICE_ACCESS|RUNTIME_ACCESS)
// through efivarfs unless it is there, and prints the variable's value:
// the same value after a restart is the same variable store.
const keepEFIVar = `#!/bin/sh
v=/sys/firmware/efi/efivars/VirtkitMarker-` + efiVarGUID + `
[ -e "$v" ] || printf '\007\000\000\000%s' "$(cat /proc/sys/kernel/random/uuid)" >"$v" || { echo "VIRTKIT-EFIVAR none"; exit 1; }
echo "VIRTKIT-EFIVAR $(tail -c +5 "$v")"
`

// TestBackendStorage is KubeVirt's backend storage on virt-local: a VM with
// a persistent vTPM gets one claim, labelled and owned as KubeVirt's, whose
// folders the launcher pod mounts where libvirt keeps the TPM's state; the
// guest reads the same endorsement key from its TPM after a live
// migration to another node, which moves the state to a claim of the
// target's, then `virtctl stop` and `virtctl start`. A VM with persistent
// EFI variables, booted through EFI, keeps its variable store (the file
// OVMF wrote) and the variable its guest wrote across a migration and a
// restart. A snapshot of the stopped vTPM VM copies its
// claim; restored after the claim's TPM was wiped, the guest finds its
// endorsement key again. Exports of the stopped VM and of the snapshot
// serve the claim as an archive holding the TPM's state. Deleting the VMs
// deletes their claims.
func TestBackendStorage(t *testing.T) {
	w := up(t, nodeName("a"), nodeName("b"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	yes, no := true, false
	tpm := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
	tpm.Name = "tpm-keeper"
	tpm.Spec.Template.Spec.Domain.Devices.TPM = &virtv1.TPMDevice{Persistent: &yes}
	for i := range tpm.Spec.Template.Spec.Volumes {
		if ci := tpm.Spec.Template.Spec.Volumes[i].CloudInitNoCloud; ci != nil {
			ci.UserData = readEK
		}
	}
	efi := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
	efi.Name = "efi-keeper"
	// OVMF boots the test guest's disk through systemd-boot (which faults
	// in 128 MiB); the guest writes an EFI variable of its own.
	efi.Spec.Template.Spec.Domain.Firmware = &virtv1.Firmware{Bootloader: &virtv1.Bootloader{EFI: &virtv1.EFI{SecureBoot: &no, Persistent: &yes}}}
	efi.Spec.Template.Spec.Domain.Resources.Requests[corev1.ResourceMemory] = resource.MustParse("256Mi")
	for i := range efi.Spec.Template.Spec.Volumes {
		if ci := efi.Spec.Template.Spec.Volumes[i].CloudInitNoCloud; ci != nil {
			ci.UserData = keepEFIVar
		}
	}
	must(t, w.c.Create(ctx, tpm))
	must(t, w.c.Create(ctx, efi))

	first := w.waitRunning(ctx, t, tpm)
	ek := w.guestEK(ctx, t, first)
	tpmClaim, tpmDir := w.stateClaim(ctx, t, tpm)
	w.waitVMI(ctx, t, tpm, "its volume status naming the claim "+tpmClaim, func(v *virtv1.VirtualMachineInstance) bool {
		return backendstorage.ClaimName(&v.Status) == tpmClaim
	})
	if perm, _ := filepath.Glob(filepath.Join(tpmDir, backendstorage.SubPathTPM, "*", "tpm2", "tpm2-00.permall")); len(perm) != 1 {
		t.Errorf("the TPM's state in the claim: %v, want one tpm2-00.permall", perm)
	}
	if _, err := os.Stat(filepath.Join(tpmDir, backendstorage.SubPathTPMCA, "issuercert.pem")); err != nil {
		t.Errorf("the TPM's local CA in the claim: %v", err)
	}

	efiFirst := w.waitRunning(ctx, t, efi)
	efiVar := w.guestEFIVar(ctx, t, efiFirst)
	t.Logf("the guest's EFI variable VirtkitMarker: %s", efiVar)
	_, efiDir := w.stateClaim(ctx, t, efi)
	// What libvirt copies for a guest without a store (virt/domain's
	// default template).
	template, err := os.ReadFile("/usr/share/OVMF/OVMF_VARS_4M.fd")
	must(t, err)
	vars := filepath.Join(efiDir, backendstorage.SubPathNVRAM, efiFirst.Name+"_VARS.fd")
	var before syscall.Stat_t
	eventually(ctx, t, "the EFI variable store in the claim, written by OVMF", func() (bool, string) {
		if err := syscall.Stat(vars, &before); err != nil {
			return false, err.Error()
		}
		b, err := os.ReadFile(vars)
		return err == nil && !bytes.Equal(b, template), fmt.Sprintf("%d bytes, the template's: %v, %v", len(b), bytes.Equal(b, template), err)
	})

	// A live migration moves the state to a claim of the target's: the
	// VM's claim is another one after it, the first one goes.
	tpmClaim, tpmDir = w.migrateState(ctx, t, tpm, tpmClaim)
	if perm, _ := filepath.Glob(filepath.Join(tpmDir, backendstorage.SubPathTPM, "*", "tpm2", "tpm2-00.permall")); len(perm) != 1 {
		t.Errorf("the TPM's state in the target's claim: %v, want one tpm2-00.permall", perm)
	}
	efiClaim, _ := w.stateClaim(ctx, t, efi)
	_, efiDir = w.migrateState(ctx, t, efi, efiClaim)
	vars = filepath.Join(efiDir, backendstorage.SubPathNVRAM, efiFirst.Name+"_VARS.fd")
	eventually(ctx, t, "the EFI variable store in the target's claim, as OVMF wrote it", func() (bool, string) {
		if err := syscall.Stat(vars, &before); err != nil {
			return false, err.Error()
		}
		b, err := os.ReadFile(vars)
		return err == nil && !bytes.Equal(b, template), fmt.Sprintf("%d bytes, the template's: %v, %v", len(b), bytes.Equal(b, template), err)
	})

	// Stop and start: the guest finds the same TPM, and libvirt the
	// variable store, in the claim the migration handed over.
	for _, vm := range []*virtv1.VirtualMachine{tpm, efi} {
		w.virtctl(ctx, t, "stop", vm.Name, "-n", vm.Namespace)
	}
	for _, vm := range []*virtv1.VirtualMachine{tpm, efi} {
		w.waitNoVMI(ctx, t, vm)
		w.virtctl(ctx, t, "start", vm.Name, "-n", vm.Namespace)
	}
	second := w.waitRunning(ctx, t, tpm)
	if second.UID == first.UID {
		t.Fatal("the VMI after start is the old one")
	}
	if again := w.guestEK(ctx, t, second); again != ek {
		t.Errorf("the endorsement key after a migration and a restart:\n%s\nwant the first boot's:\n%s", again, ek)
	}
	if again, _ := w.stateClaim(ctx, t, tpm); again != tpmClaim {
		t.Errorf("claim after a restart %s, want %s", again, tpmClaim)
	}
	efiSecond := w.waitRunning(ctx, t, efi)
	if again := w.guestEFIVar(ctx, t, efiSecond); again != efiVar {
		t.Errorf("the guest's EFI variable after a migration and a restart: %s, want the first boot's %s", again, efiVar)
	}
	var after syscall.Stat_t
	must(t, syscall.Stat(vars, &after))
	if after.Ino != before.Ino {
		t.Errorf("the EFI variable store was made again (inode %d, was %d): libvirt did not find the migrated one", after.Ino, before.Ino)
	}

	// A snapshot of the stopped VM copies its backend storage. The TPM in
	// the VM's claim is wiped, so only the snapshot still holds it; the
	// restore replaces the claim, and the guest finds its TPM again.
	w.virtctl(ctx, t, "stop", tpm.Name, "-n", tpm.Namespace)
	w.waitNoVMI(ctx, t, tpm)
	snap := w.snapshotOf(ctx, t, tpm.Namespace, "tpm-state", tpm.Name)
	stateVol := backendstorage.SnapshotVolumeName(tpm.Name)
	if l := snap.Status.SnapshotVolumes; l == nil || !slices.Contains(l.IncludedVolumes, stateVol) {
		t.Errorf("snapshot volumes %+v, want %s included", l, stateVol)
	}
	// Exports serve the state as an archive: one of the stopped VM, which
	// virtctl makes, downloads from and deletes, and one of the snapshot.
	for _, src := range []string{"--vm=" + tpm.Name, "--snapshot=" + snap.Name} {
		if names := w.downloadState(ctx, t, src, tpmClaim); !slices.ContainsFunc(names, permall.MatchString) {
			t.Errorf("the state exported with %s: %v, want the TPM's tpm2-00.permall", src, names)
		}
	}
	wiped, err := os.ReadDir(filepath.Join(tpmDir, backendstorage.SubPathTPM))
	must(t, err)
	for _, e := range wiped {
		must(t, os.RemoveAll(filepath.Join(tpmDir, backendstorage.SubPathTPM, e.Name())))
	}
	w.restore(ctx, t, tpm.Namespace, "tpm-back", tpm.Name, snap.Name)
	if restored, _ := w.stateClaim(ctx, t, tpm); restored == tpmClaim {
		t.Errorf("the VM's claim after the restore is still %s", tpmClaim)
	}
	w.virtctl(ctx, t, "start", tpm.Name, "-n", tpm.Namespace)
	third := w.waitRunning(ctx, t, tpm)
	if again := w.guestEK(ctx, t, third); again != ek {
		t.Errorf("the endorsement key after a restore:\n%s\nwant the first boot's:\n%s", again, ek)
	}
	must(t, w.c.Delete(ctx, &vmsnapshotv1.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Namespace: tpm.Namespace, Name: "tpm-back"}}))
	must(t, w.c.Delete(ctx, snap))

	for _, vm := range []*virtv1.VirtualMachine{tpm, efi} {
		must(t, w.c.Delete(ctx, vm))
	}
	eventually(ctx, t, "the backend-storage claims gone with their VMs", func() (bool, string) {
		var claims corev1.PersistentVolumeClaimList
		must(t, w.c.List(ctx, &claims, client.InNamespace("default"), client.HasLabels{backendstorage.LabelVM}))
		return len(claims.Items) == 0, fmt.Sprintf("%d claims", len(claims.Items))
	})
}

// permall matches the path of a vTPM's state file in an archive of a
// backend-storage claim.
var permall = regexp.MustCompile(`(^|/)` + backendstorage.SubPathTPM + `/[^/]+/tpm2/tpm2-00\.permall$`)

// downloadState has KubeVirt's virtctl export the source (--vm=<vm> or
// --snapshot=<snapshot>) and download the volume claim, a backend-storage
// claim, which an export serves as a gzipped tar; it returns the names of
// the tar's regular files.
func (w *world) downloadState(ctx context.Context, t *testing.T, source, claim string) []string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "state.tar.gz")
	name := "state-" + strings.TrimPrefix(strings.SplitN(source, "=", 2)[0], "--")
	w.virtctl(ctx, t, "vmexport", "download", name, source, "--volume="+claim, "--output="+out, "-n", "default")
	f, err := os.Open(out)
	must(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	must(t, err)
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		must(t, err)
		if h.Typeflag == tar.TypeReg {
			names = append(names, h.Name)
		}
	}
}

// migrateState migrates vm, whose backend-storage claim is claim, to the
// other node, and returns its claim after the migration (the target's,
// which the migration recorded) and the claim's folder; claim is being
// deleted.
func (w *world) migrateState(ctx context.Context, t *testing.T, vm *virtv1.VirtualMachine, claim string) (string, string) {
	t.Helper()
	src := w.vmiOf(ctx, t, vm)
	w.virtctl(ctx, t, "migrate", vm.Name, "-n", vm.Namespace)
	mig := w.waitMigration(ctx, t, vm, virtv1.MigrationSucceeded)
	ms := mig.Status.MigrationState
	if ms.SourcePersistentStatePVCName != claim || ms.TargetPersistentStatePVCName == "" || ms.TargetPersistentStatePVCName == claim {
		t.Errorf("migration of %s: claims %q to %q, want from %s to a new one", vm.Name, ms.SourcePersistentStatePVCName, ms.TargetPersistentStatePVCName, claim)
	}
	w.waitVMI(ctx, t, vm, "on the other node, its volume status naming the target's claim", func(v *virtv1.VirtualMachineInstance) bool {
		return v.Status.NodeName != src.Status.NodeName && backendstorage.ClaimName(&v.Status) == ms.TargetPersistentStatePVCName
	})
	// The controller labels the target's claim for the VM, then deletes
	// the source's, which goes once the ended source pod that names it is
	// deleted (with the VMI), as in KubeVirt.
	eventually(ctx, t, "the source's claim "+claim+" deleted", func() (bool, string) {
		var c corev1.PersistentVolumeClaim
		err := w.c.Get(ctx, client.ObjectKey{Namespace: vm.Namespace, Name: claim}, &c)
		return apierrors.IsNotFound(err) || (err == nil && c.DeletionTimestamp != nil), fmt.Sprint(err)
	})
	now, dir := w.stateClaim(ctx, t, vm)
	if now != ms.TargetPersistentStatePVCName {
		t.Errorf("the claim of %s after its migration %s, want the target's %s", vm.Name, now, ms.TargetPersistentStatePVCName)
	}
	return now, dir
}

// ekLine is the guest's report of its TPM's endorsement key: a TPM2
// response without sessions (tag 8001), its size, success (00000000).
var ekLine = regexp.MustCompile(`VIRTKIT-TPM-EK (8001[0-9a-f]{8}00000000[0-9a-f]+)`)

// efiVarLine is the guest's report of its EFI variable's value.
var efiVarLine = regexp.MustCompile(`VIRTKIT-EFIVAR ([0-9a-f-]{36})`)

// guestEK waits for the endorsement key the guest of vmi read from its TPM.
func (w *world) guestEK(ctx context.Context, t *testing.T, vmi *virtv1.VirtualMachineInstance) string {
	t.Helper()
	return w.guestReport(ctx, t, vmi, "the guest reading its TPM's endorsement key", "VIRTKIT-TPM-EK", ekLine)
}

// guestEFIVar waits for the value the guest of vmi read from its EFI
// variable (keepEFIVar).
func (w *world) guestEFIVar(ctx context.Context, t *testing.T, vmi *virtv1.VirtualMachineInstance) string {
	t.Helper()
	return w.guestReport(ctx, t, vmi, "the guest reading its EFI variable", "VIRTKIT-EFIVAR", efiVarLine)
}

// guestReport waits for a line of the guest of vmi that starts with
// prefix and matches line, and returns line's first group.
func (w *world) guestReport(ctx context.Context, t *testing.T, vmi *virtv1.VirtualMachineInstance, what, prefix string, line *regexp.Regexp) string {
	t.Helper()
	log := w.serialLog(ctx, t, vmi)
	var got string
	eventually(ctx, t, what, func() (bool, string) {
		b, err := os.ReadFile(log)
		if err != nil {
			return false, err.Error()
		}
		if m := line.FindSubmatch(b); m != nil {
			got = string(m[1])
			return true, ""
		}
		i := strings.LastIndex(string(b), prefix)
		if i < 0 {
			return false, fmt.Sprintf("no %s line yet; the console ends with %q", prefix, b[max(0, len(b)-300):])
		}
		return false, string(b[i:min(len(b), i+80)])
	})
	return got
}

// stateClaim is vm's one backend-storage claim not being deleted (made
// for it, or restored from a snapshot), checked to be KubeVirt's
// (labelled with the VM's name, owned by the VM, bound), and its folder on
// the node.
func (w *world) stateClaim(ctx context.Context, t *testing.T, vm *virtv1.VirtualMachine) (string, string) {
	t.Helper()
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(vm), vm))
	var claim corev1.PersistentVolumeClaim
	eventually(ctx, t, "the backend-storage claim of "+vm.Name+" bound", func() (bool, string) {
		var claims corev1.PersistentVolumeClaimList
		must(t, w.c.List(ctx, &claims, client.InNamespace(vm.Namespace), client.MatchingLabels{backendstorage.LabelVM: vm.Name}))
		var live []corev1.PersistentVolumeClaim
		for _, c := range claims.Items {
			if c.DeletionTimestamp == nil {
				live = append(live, c)
			}
		}
		if len(live) != 1 {
			return false, fmt.Sprintf("%d claims not being deleted", len(live))
		}
		claim = live[0]
		return claim.Status.Phase == corev1.ClaimBound, string(claim.Status.Phase)
	})
	made := strings.HasPrefix(claim.Name, backendstorage.Prefix+"-"+vm.Name+"-")
	restored := strings.HasPrefix(claim.Name, "restore-") && strings.HasSuffix(claim.Name, "-"+backendstorage.SnapshotVolumeName(vm.Name))
	if (!made && !restored) || !metav1.IsControlledBy(&claim, vm) {
		t.Errorf("claim %s, owners %+v; want %s-%s-…, owned by the VM", claim.Name, claim.OwnerReferences, backendstorage.Prefix, vm.Name)
	}
	var pv corev1.PersistentVolume
	must(t, w.c.Get(ctx, client.ObjectKey{Name: claim.Spec.VolumeName}, &pv))
	return claim.Name, csidriver.VolumeData(filepath.Join(w.data, "csi"), pv.Spec.CSI.VolumeHandle, false)
}
