package snapshot_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/snapshot"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
	vsnap "github.com/virtkit/virtkit/virt/storage/snapshot"
)

// On a real apiserver with no snapshot controller (so VolumeSnapshots are
// never ready): a snapshot locks its stopped VM, makes its content and a
// VolumeSnapshot of its claim, and at its failureDeadline fails with
// KubeVirt's reason, deletes the unready content (and so the
// VolumeSnapshot) and unlocks the VM. A snapshot whose VolumeSnapshot is
// ready (the test plays the snapshot controller) succeeds; deleted with
// deletionPolicy Retain, its content stays without its finalizer.
func TestDeadlineAndRetain(t *testing.T) {
	env := kubeenv.ControlPlane(t)
	mgr := kubeenv.NewManager(t, env)
	must(t, snapshot.NewSnapshotReconciler().SetupWithManager(mgr))
	kubeenv.RunManager(t, mgr)
	c := env.Client
	ctx := testenv.Within(t, 2*time.Minute)
	const ns = "default"

	vm := stoppedVMWithClaim(ctx, t, c, ns)

	take := func(name string, deadline time.Duration, policy vmsnapshotv1.DeletionPolicy) *vmsnapshotv1.VirtualMachineSnapshot {
		s := &vmsnapshotv1.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: vmsnapshotv1.VirtualMachineSnapshotSpec{Source: corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: vm.Name},
				FailureDeadline: &metav1.Duration{Duration: deadline}, DeletionPolicy: ptr.To(policy)}}
		must(t, c.Create(ctx, s))
		return s
	}
	wait := func(s *vmsnapshotv1.VirtualMachineSnapshot, what string, ok func(*vmsnapshotv1.VirtualMachineSnapshot) bool) {
		t.Helper()
		testenv.Eventually(ctx, t, what, func() (bool, string) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
				return false, err.Error()
			}
			return ok(s), fmt.Sprintf("%+v", s.Status)
		})
	}
	vmLockedBy := func() string {
		got := &virtv1.VirtualMachine{}
		must(t, c.Get(ctx, client.ObjectKeyFromObject(vm), got))
		return ptr.Deref(got.Status.SnapshotInProgress, "")
	}

	// Never ready: fails at its deadline.
	late := take("late", 8*time.Second, vmsnapshotv1.VirtualMachineSnapshotContentDelete)
	wait(late, "the VolumeSnapshot made and the VM locked", func(s *vmsnapshotv1.VirtualMachineSnapshot) bool {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: vsnap.VolumeSnapshotName(s.UID, "data")}, &volumesnapshotv1.VolumeSnapshot{})
		return err == nil && vmLockedBy() == "late" && s.Status != nil && s.Status.Phase == vmsnapshotv1.InProgress
	})
	wait(late, "Failed at the deadline", func(s *vmsnapshotv1.VirtualMachineSnapshot) bool {
		if s.Status == nil || s.Status.Phase != vmsnapshotv1.Failed {
			return false
		}
		for _, cond := range s.Status.Conditions {
			if cond.Type == vmsnapshotv1.ConditionFailure && cond.Status == corev1.ConditionTrue && cond.Reason == "snapshot deadline exceeded" {
				return true
			}
		}
		return false
	})
	testenv.Eventually(ctx, t, "the unready content gone and the VM unlocked", func() (bool, string) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: vsnap.ContentName(late.UID)}, &vmsnapshotv1.VirtualMachineSnapshotContent{})
		return apierrors.IsNotFound(err) && vmLockedBy() == "", fmt.Sprintf("content: %v, VM locked by %q", err, vmLockedBy())
	})

	// Ready: succeeds; deleted with Retain, its content stays.
	kept := take("kept", time.Minute, vmsnapshotv1.VirtualMachineSnapshotContentRetain)
	vs := &volumesnapshotv1.VolumeSnapshot{}
	testenv.Eventually(ctx, t, "the VolumeSnapshot made", func() (bool, string) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: vsnap.VolumeSnapshotName(kept.UID, "data")}, vs)
		return err == nil, fmt.Sprint(err)
	})
	now := metav1.Now()
	vs.Status = &volumesnapshotv1.VolumeSnapshotStatus{ReadyToUse: ptr.To(true), CreationTime: &now, RestoreSize: ptr.To(resource.MustParse("1Gi"))}
	must(t, c.Status().Update(ctx, vs))
	wait(kept, "Succeeded and ready", func(s *vmsnapshotv1.VirtualMachineSnapshot) bool {
		return s.Status != nil && s.Status.Phase == vmsnapshotv1.Succeeded && ptr.Deref(s.Status.ReadyToUse, false) && s.Status.CreationTime != nil
	})
	if vmLockedBy() != "" {
		t.Errorf("the VM is still locked by %q", vmLockedBy())
	}
	must(t, c.Delete(ctx, kept))
	testenv.Eventually(ctx, t, "the snapshot gone, its content kept", func() (bool, string) {
		serr := c.Get(ctx, client.ObjectKeyFromObject(kept), &vmsnapshotv1.VirtualMachineSnapshot{})
		content := &vmsnapshotv1.VirtualMachineSnapshotContent{}
		cerr := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: vsnap.ContentName(kept.UID)}, content)
		return apierrors.IsNotFound(serr) && cerr == nil && len(content.Finalizers) == 0 && content.DeletionTimestamp == nil,
			fmt.Sprintf("snapshot: %v, content: %v %v", serr, cerr, content.Finalizers)
	})
}

// A restore onto a running VM with targetReadinessPolicy WaitGracePeriod
// waits, saying so, and fails with KubeVirt's message once 5 minutes have
// passed since its creation (the test moves the restore controller's
// clock). A restore deleted before it completes deletes the claims it
// made.
func TestRestoreWaitGracePeriod(t *testing.T) {
	env := kubeenv.ControlPlane(t)
	mgr := kubeenv.NewManager(t, env)
	clk := clocktesting.NewFakeClock(time.Now())
	must(t, snapshot.NewSnapshotReconciler().SetupWithManager(mgr))
	must(t, snapshot.NewRestoreReconciler(snapshot.WithClock(clk)).SetupWithManager(mgr))
	kubeenv.RunManager(t, mgr)
	c := env.Client
	ctx := testenv.Within(t, 2*time.Minute)
	const ns = "default"

	vm := stoppedVMWithClaim(ctx, t, c, ns)
	s := &vmsnapshotv1.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"},
		Spec: vmsnapshotv1.VirtualMachineSnapshotSpec{Source: corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: vm.Name}}}
	must(t, c.Create(ctx, s))
	vs := &volumesnapshotv1.VolumeSnapshot{}
	testenv.Eventually(ctx, t, "the VolumeSnapshot made", func() (bool, string) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: vsnap.VolumeSnapshotName(s.UID, "data")}, vs)
		return err == nil, fmt.Sprint(err)
	})
	now := metav1.Now()
	vs.Status = &volumesnapshotv1.VolumeSnapshotStatus{ReadyToUse: ptr.To(true), CreationTime: &now, RestoreSize: ptr.To(resource.MustParse("1Gi"))}
	must(t, c.Status().Update(ctx, vs))
	testenv.Eventually(ctx, t, "the snapshot ready", func() (bool, string) {
		must(t, c.Get(ctx, client.ObjectKeyFromObject(s), s))
		return s.Status != nil && ptr.Deref(s.Status.ReadyToUse, false), fmt.Sprintf("%+v", s.Status)
	})

	// The VM runs now.
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: vm.Name}}
	must(t, c.Create(ctx, vmi))
	vmi.Status.Phase = virtv1.Running
	must(t, c.Status().Update(ctx, vmi))

	rs := &vmsnapshotv1.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "back"},
		Spec: vmsnapshotv1.VirtualMachineRestoreSpec{Target: corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: vm.Name},
			VirtualMachineSnapshotName: s.Name, TargetReadinessPolicy: ptr.To(vmsnapshotv1.VirtualMachineRestoreWaitGracePeriodAndFail)}}
	must(t, c.Create(ctx, rs))
	reason := func(typ vmsnapshotv1.ConditionType) (corev1.ConditionStatus, string) {
		if rs.Status != nil {
			for _, cond := range rs.Status.Conditions {
				if cond.Type == typ {
					return cond.Status, cond.Reason
				}
			}
		}
		return "", ""
	}
	testenv.Eventually(ctx, t, "the restore waiting for the VM", func() (bool, string) {
		must(t, c.Get(ctx, client.ObjectKeyFromObject(rs), rs))
		_, why := reason(vmsnapshotv1.ConditionProgressing)
		return why == "Waiting for target VM to be powered off. Please stop the restore target to proceed with restore, or the operation will fail after 5m0s", why
	})
	clk.Step(6 * time.Minute)
	testenv.Eventually(ctx, t, "the restore failed past the grace period", func() (bool, string) {
		must(t, c.Get(ctx, client.ObjectKeyFromObject(rs), rs))
		st, why := reason(vmsnapshotv1.ConditionFailure)
		return st == corev1.ConditionTrue && why == "Restore target failed to be ready within 5m0s. Please power off the target VM before attempting restore", why
	})
	got := &virtv1.VirtualMachine{}
	must(t, c.Get(ctx, client.ObjectKeyFromObject(vm), got))
	if got.Status.RestoreInProgress != nil || got.Annotations[vsnap.LastRestoreAnnotation] != "" {
		t.Errorf("the running VM was touched: restoreInProgress %v, annotations %v", got.Status.RestoreInProgress, got.Annotations)
	}

	// A restore to a new VM deleted while its claim waits to be bound
	// (nothing binds it here) takes the claim with it.
	pending := &vmsnapshotv1.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "to-new"},
		Spec: vmsnapshotv1.VirtualMachineRestoreSpec{Target: corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "copy"},
			VirtualMachineSnapshotName: s.Name}}
	must(t, c.Create(ctx, pending))
	claim := &corev1.PersistentVolumeClaim{}
	testenv.Eventually(ctx, t, "the restore's claim made", func() (bool, string) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "restore-" + string(pending.UID) + "-data"}, claim)
		return err == nil, fmt.Sprint(err)
	})
	must(t, c.Delete(ctx, pending))
	testenv.Eventually(ctx, t, "the claim deleted with its restore", func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(claim), claim)
		// No controller here removes the claim's protection finalizer.
		return apierrors.IsNotFound(err) || (err == nil && claim.DeletionTimestamp != nil), fmt.Sprint(err)
	})
}

// stoppedVMWithClaim makes the StorageClass and VolumeSnapshotClass
// "local", a bound claim "data" of that class (no provisioner runs: the
// test binds it) and a halted VM "vm" with it as its one volume.
func stoppedVMWithClaim(ctx context.Context, t *testing.T, c client.Client, ns string) *virtv1.VirtualMachine {
	t.Helper()
	must(t, c.Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Provisioner: "local.csi.virtkit.io"}))
	must(t, c.Create(ctx, &volumesnapshotv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Driver: "local.csi.virtkit.io",
		DeletionPolicy: volumesnapshotv1.VolumeSnapshotContentDelete}))
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("local"), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	must(t, c.Create(ctx, pvc))
	pvc.Status.Phase = corev1.ClaimBound
	must(t, c.Status().Update(ctx, pvc))
	vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vm"},
		Spec: virtv1.VirtualMachineSpec{RunStrategy: ptr.To(virtv1.RunStrategyHalted), Template: &virtv1.VirtualMachineInstanceTemplateSpec{
			Spec: virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{Devices: virtv1.Devices{Disks: []virtv1.Disk{{Name: "data"}}}},
				Volumes: []virtv1.Volume{{Name: "data", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
					PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}}}}
	must(t, c.Create(ctx, vm))
	return vm
}
