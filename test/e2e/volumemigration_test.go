package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/local/cluster"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// KubeVirt's volume migration end to end on two local nodes: a running VM
// with updateVolumesStrategy: Migration and a data disk on a claim is
// pointed at a new claim. A claim that does not exist is reported on the
// VMI's VolumesChange condition and nothing moves; the real one starts the
// migration (the workload updater's, with LiveMigrate among the KubeVirt
// CR's workload update methods), which copies the disk into the new claim
// over the handlers' TLS path while the guest's heartbeat goes on. The VMI
// then names the new claim on the other node, its volume migration is done,
// the VM records it, and after a restart the guest finds on the new claim
// the marker it wrote on the old one, which is left as it was.
func TestVolumeMigration(t *testing.T) {
	a, b := nodeName("a"), nodeName("b")
	w := up(t, a, b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	w.liveMigrateWorkloads(ctx, t)

	oldClaim, newClaim := w.rwoClaim(ctx, t, "volmig-old"), w.rwoClaim(ctx, t, "volmig-new")
	vm := w.tinyOnClaim(t, oldClaim.Name)
	vm.Name = "volmig"
	strategy := virtv1.UpdateVolumesStrategyMigration
	vm.Spec.UpdateVolumesStrategy = &strategy
	must(t, w.c.Create(ctx, vm))
	src := w.waitRunning(ctx, t, vm)
	srcLog := w.serialLog(ctx, t, src)
	waitFile(ctx, t, srcLog, testguest.ReadyMarker)
	// vda is the containerDisk, vdb cloud-init's, vdc the claim's.
	waitFile(ctx, t, srcLog, "VIRTKIT-DISK vdc previous=none wrote=1 readback=ok")

	pointAt := func(name string) {
		t.Helper()
		must(t, w.c.Get(ctx, client.ObjectKeyFromObject(vm), vm))
		vols := vm.Spec.Template.Spec.Volumes
		vols[len(vols)-1].PersistentVolumeClaim.ClaimName = name
		must(t, w.c.Update(ctx, vm))
	}

	// A destination claim that does not exist: said, nothing moves.
	pointAt("volmig-absent")
	w.waitVMI(ctx, t, vm, "saying the destination claim does not exist", func(v *virtv1.VirtualMachineInstance) bool {
		for _, c := range v.Status.Conditions {
			if c.Type == virtv1.VirtualMachineInstanceVolumesChange {
				return c.Status == corev1.ConditionFalse && strings.Contains(c.Message, `"volmig-absent" not found`)
			}
		}
		return false
	})
	if v := w.vmiOf(ctx, t, vm); v.Status.MigrationState != nil || len(v.Status.MigratedVolumes) > 0 {
		t.Errorf("a volume migration to a missing claim began: %+v, %+v", v.Status.MigrationState, v.Status.MigratedVolumes)
	}

	// The real one: migrated, the disk copied.
	before := lastHeartbeat(t, srcLog)
	pointAt(newClaim.Name)
	mig := w.waitMigration(ctx, t, vm, virtv1.MigrationSucceeded)
	if _, ours := mig.Annotations[virtv1.WorkloadUpdateMigrationAnnotation]; !ours {
		t.Errorf("migration %s is not the workload updater's: annotations %v", mig.Name, mig.Annotations)
	}
	dst := w.waitVMI(ctx, t, vm, "on the other node, its volume migration done", func(v *virtv1.VirtualMachineInstance) bool {
		return v.Status.NodeName != src.Status.NodeName && v.Status.Phase == virtv1.Running && len(v.Status.MigratedVolumes) == 0
	})
	for _, c := range dst.Status.Conditions {
		if c.Type == virtv1.VirtualMachineInstanceVolumesChange {
			t.Errorf("the VMI still has the VolumesChange condition after the migration: %+v", c)
		}
	}
	if got := dst.Spec.Volumes[len(dst.Spec.Volumes)-1].PersistentVolumeClaim.ClaimName; got != newClaim.Name {
		t.Errorf("the VMI's data volume names claim %q, want %q", got, newClaim.Name)
	}
	for _, vs := range dst.Status.VolumeStatus {
		if vs.Name == "data" && (vs.PersistentVolumeClaimInfo == nil || vs.PersistentVolumeClaimInfo.ClaimName != newClaim.Name) {
			t.Errorf("volumeStatus of data: %+v, want claim %s", vs.PersistentVolumeClaimInfo, newClaim.Name)
		}
	}
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(vm), vm))
	if us := vm.Status.VolumeUpdateState; us == nil || us.VolumeMigrationState == nil || len(us.VolumeMigrationState.MigratedVolumes) != 1 ||
		us.VolumeMigrationState.MigratedVolumes[0].SourcePVCInfo.ClaimName != oldClaim.Name ||
		us.VolumeMigrationState.MigratedVolumes[0].DestinationPVCInfo.ClaimName != newClaim.Name {
		t.Errorf("the VM's volumeUpdateState: %+v", us)
	}
	dstLog := filepath.Join(w.launcherFolder(ctx, t, src, mig.UID), contract.SerialLog)
	if first := firstHeartbeat(ctx, t, dstLog); first < before {
		t.Errorf("heartbeat %d before the volume migration, first %d on the target: the guest restarted", before, first)
	}
	// What the guest wrote is in the new claim's image already, an image
	// of the size the source reported.
	var size int64
	for _, vs := range dst.Status.VolumeStatus {
		if vs.Name == "data" {
			size = vs.Size
		}
	}
	for _, pvc := range []*corev1.PersistentVolumeClaim{oldClaim, newClaim} {
		must(t, w.c.Get(ctx, client.ObjectKeyFromObject(pvc), pvc))
		img := w.claimDisk(ctx, t, pvc)
		if st, err := os.Stat(img); err != nil || size == 0 || st.Size() != size {
			t.Errorf("claim %s's disk.img: %v, %v; want the %d bytes volumeStatus reports", pvc.Name, st, err, size)
		}
		f, err := os.Open(img)
		must(t, err)
		head := make([]byte, 32)
		_, err = f.ReadAt(head, 0)
		f.Close()
		if err != nil || !strings.HasPrefix(string(head), "VIRTKIT-DATA n=1\n") {
			t.Errorf("claim %s's disk.img begins %.20q (%v), want the guest's first marker", pvc.Name, head, err)
		}
	}

	// After a restart the guest reads its marker from the new claim.
	w.virtctl(ctx, t, "restart", vm.Name, "-n", vm.Namespace)
	again := w.waitRestarted(ctx, t, vm, dst.UID)
	waitFile(ctx, t, w.serialLog(ctx, t, again), "VIRTKIT-DISK vdc previous=1 wrote=2 readback=ok")
	if got := again.Spec.Volumes[len(again.Spec.Volumes)-1].PersistentVolumeClaim.ClaimName; got != newClaim.Name {
		t.Errorf("after the restart the data volume names claim %q, want %q", got, newClaim.Name)
	}
	w.deleteVM(ctx, t, vm)
	for _, pvc := range []*corev1.PersistentVolumeClaim{oldClaim, newClaim} {
		must(t, w.c.Delete(ctx, pvc))
	}
}

// Beyond KubeVirt, a VM whose data disk is a ReadWriteOnce claim migrates
// with `virtctl migrate`: the migration copies the claim to a new one that
// the target mounts. Cancelled while it copies (1 MiB/s), the guest goes on
// on its own claim at the source and the half-made copy is deleted;
// migrated, the VM and the VMI name the copy, which is an ordinary claim
// now, the old claim is left as it was, and after a restart the guest
// reads from the copy the marker it wrote before.
func TestClaimCopyMigration(t *testing.T) {
	a, b := nodeName("a"), nodeName("b")
	w := up(t, a, b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	pvc := w.rwoClaim(ctx, t, "local-data")
	// Its name stays tiny: the guest's web page, which stillOnSource asks for, says it.
	vm := w.tinyOnClaim(t, pvc.Name)
	must(t, w.c.Create(ctx, vm))
	src := w.waitRunning(ctx, t, vm)
	srcLog := w.serialLog(ctx, t, src)
	waitFile(ctx, t, srcLog, testguest.ReadyMarker)
	waitFile(ctx, t, srcLog, "VIRTKIT-DISK vdc previous=none wrote=1 readback=ok")
	w.waitVMI(ctx, t, vm, "not live-migratable for its ReadWriteOnce claim", func(v *virtv1.VirtualMachineInstance) bool {
		for _, c := range v.Status.Conditions {
			if c.Type == virtv1.VirtualMachineInstanceIsMigratable {
				return c.Status == corev1.ConditionFalse && c.Reason == virtv1.VirtualMachineInstanceReasonDisksNotMigratable
			}
		}
		return false
	})
	dataClaim := func(v *virtv1.VirtualMachineInstance) string {
		return v.Spec.Volumes[len(v.Spec.Volumes)-1].PersistentVolumeClaim.ClaimName
	}

	// Cancelled while it copies at 1 MiB/s.
	kvKey := client.ObjectKey{Namespace: cluster.Namespace, Name: "kubevirt"}
	updateKubeVirt(ctx, t, w, kvKey, func(kv *virtv1.KubeVirt) {
		kv.Spec.Configuration.MigrationConfiguration = &virtv1.MigrationConfiguration{
			BandwidthPerMigration: resource.NewQuantity(1<<20, resource.BinarySI)}
	})
	w.virtctl(ctx, t, "migrate", vm.Name, "-n", vm.Namespace)
	running := w.waitMigration(ctx, t, vm, virtv1.MigrationRunning)
	copyName := dataClaim(w.vmiOf(ctx, t, vm))
	if copyName == pvc.Name {
		t.Fatalf("the running migration's VMI still names claim %s", copyName)
	}
	time.Sleep(2 * time.Second) // the disk is being copied
	w.virtctl(ctx, t, "migrate-cancel", vm.Name, "-n", vm.Namespace)
	eventually(ctx, t, "the cancelled migration and its copy gone", func() (bool, string) {
		merr := w.c.Get(ctx, client.ObjectKeyFromObject(running), &virtv1.VirtualMachineInstanceMigration{})
		cerr := w.c.Get(ctx, client.ObjectKey{Namespace: vm.Namespace, Name: copyName}, &corev1.PersistentVolumeClaim{})
		return apierrors.IsNotFound(merr) && apierrors.IsNotFound(cerr), fmt.Sprintf("migration: %v, copy %s: %v", merr, copyName, cerr)
	})
	w.stillOnSource(ctx, t, vm, src, srcLog, running)
	if v := w.vmiOf(ctx, t, vm); dataClaim(v) != pvc.Name || len(v.Status.MigratedVolumes) > 0 {
		t.Errorf("after the cancel the VMI names claim %s with migratedVolumes %+v; want %s and none", dataClaim(v), v.Status.MigratedVolumes, pvc.Name)
	}

	// Migrated at full speed.
	updateKubeVirt(ctx, t, w, kvKey, func(kv *virtv1.KubeVirt) { kv.Spec.Configuration.MigrationConfiguration = nil })
	before := lastHeartbeat(t, srcLog)
	w.virtctl(ctx, t, "migrate", vm.Name, "-n", vm.Namespace)
	mig := w.waitMigration(ctx, t, vm, virtv1.MigrationSucceeded)
	dst := w.waitVMI(ctx, t, vm, "on the other node, on the copy", func(v *virtv1.VirtualMachineInstance) bool {
		return v.Status.NodeName != src.Status.NodeName && v.Status.Phase == virtv1.Running && len(v.Status.MigratedVolumes) == 0
	})
	copyName = dataClaim(dst)
	if copyName == pvc.Name {
		t.Fatalf("the migrated VMI names its old claim %s", copyName)
	}
	dstLog := filepath.Join(w.launcherFolder(ctx, t, src, mig.UID), contract.SerialLog)
	if first := firstHeartbeat(ctx, t, dstLog); first < before {
		t.Errorf("heartbeat %d before the migration, first %d on the target: the guest restarted", before, first)
	}
	eventually(ctx, t, "the VM naming the copy, an ordinary claim now", func() (bool, string) {
		must(t, w.c.Get(ctx, client.ObjectKeyFromObject(vm), vm))
		cp := &corev1.PersistentVolumeClaim{}
		must(t, w.c.Get(ctx, client.ObjectKey{Namespace: vm.Namespace, Name: copyName}, cp))
		named := vm.Spec.Template.Spec.Volumes[len(vm.Spec.Template.Spec.Volumes)-1].PersistentVolumeClaim.ClaimName
		return named == copyName && len(cp.OwnerReferences) == 0 && len(cp.Labels) == 0,
			fmt.Sprintf("VM names %s; copy owners %v, labels %v", named, cp.OwnerReferences, cp.Labels)
	})
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(pvc), pvc))
	if pvc.DeletionTimestamp != nil {
		t.Errorf("the old claim %s is being deleted", pvc.Name)
	}

	w.virtctl(ctx, t, "restart", vm.Name, "-n", vm.Namespace)
	again := w.waitRestarted(ctx, t, vm, dst.UID)
	waitFile(ctx, t, w.serialLog(ctx, t, again), "VIRTKIT-DISK vdc previous=1 wrote=2 readback=ok")
	if got := dataClaim(again); got != copyName {
		t.Errorf("after the restart the data volume names claim %q, want the copy %q", got, copyName)
	}
	w.deleteVM(ctx, t, vm)
	must(t, w.c.Delete(ctx, pvc))
	must(t, w.c.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: vm.Namespace, Name: copyName}}))
}

// waitRestarted waits for vm's VMI after old to run; in between there may
// be none.
func (w *world) waitRestarted(ctx context.Context, t *testing.T, vm *virtv1.VirtualMachine, old types.UID) *virtv1.VirtualMachineInstance {
	t.Helper()
	v := &virtv1.VirtualMachineInstance{}
	eventually(ctx, t, "VMI "+vm.Name+" running again after its restart", func() (bool, string) {
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(vm), v); err != nil {
			if apierrors.IsNotFound(err) {
				return false, "no VMI"
			}
			t.Fatal(err)
		}
		return v.UID != old && v.Status.Phase == virtv1.Running, fmt.Sprintf("%s %s", v.UID, v.Status.Phase)
	})
	return v
}

// rwoClaim creates a ReadWriteOnce claim of 64 MiB in the default namespace.
func (w *world) rwoClaim(ctx context.Context, t *testing.T, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}},
		},
	}
	must(t, w.c.Create(ctx, pvc))
	return pvc
}

// tinyOnClaim is the example VM with a data disk (vdc) on claim, not yet
// created.
func (w *world) tinyOnClaim(t *testing.T, claim string) *virtv1.VirtualMachine {
	t.Helper()
	vm := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
	spec := &vm.Spec.Template.Spec
	spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, virtv1.Disk{Name: "data",
		DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusVirtio}}})
	spec.Volumes = append(spec.Volumes, virtv1.Volume{Name: "data", VolumeSource: virtv1.VolumeSource{
		PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}})
	return vm
}

// liveMigrateWorkloads lists LiveMigrate among the workload update methods
// of the KubeVirt CR virt-local installs, so that the workload updater
// migrates the VMIs that need it (a volume migration, a LiveUpdate that
// outgrew its pod), as in KubeVirt.
func (w *world) liveMigrateWorkloads(ctx context.Context, t *testing.T) {
	t.Helper()
	var kvs virtv1.KubeVirtList
	must(t, w.c.List(ctx, &kvs))
	if len(kvs.Items) != 1 {
		t.Fatalf("%d KubeVirt CRs, want the one virt-local installs", len(kvs.Items))
	}
	updateKubeVirt(ctx, t, w, client.ObjectKeyFromObject(&kvs.Items[0]), func(kv *virtv1.KubeVirt) {
		kv.Spec.WorkloadUpdateStrategy.WorkloadUpdateMethods = []virtv1.WorkloadUpdateMethod{virtv1.WorkloadUpdateMethodLiveMigrate}
	})
}
