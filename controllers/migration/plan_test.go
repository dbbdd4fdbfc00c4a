package migration_test

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/migration"
	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virt/migrate"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func mig(phase virtv1.VirtualMachineInstanceMigrationPhase, edits ...func(*virtv1.VirtualMachineInstanceMigration)) *virtv1.VirtualMachineInstanceMigration {
	m := &virtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: "ns", UID: "m1-uid", Finalizers: []string{migration.Finalizer}},
		Spec:       virtv1.VirtualMachineInstanceMigrationSpec{VMIName: "vmi1"},
		Status:     virtv1.VirtualMachineInstanceMigrationStatus{Phase: phase},
	}
	for _, e := range edits {
		e(m)
	}
	return m
}

func running(ms *virtv1.VirtualMachineInstanceMigrationState) *virtv1.VirtualMachineInstance {
	return &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "vmi1", Namespace: "ns", UID: "vmi-uid"},
		Status:     virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Running, NodeName: "a", MigrationState: ms},
	}
}

func state(edits ...func(*virtv1.VirtualMachineInstanceMigrationState)) *virtv1.VirtualMachineInstanceMigrationState {
	ms := &virtv1.VirtualMachineInstanceMigrationState{MigrationUID: "m1-uid", SourceNode: "a", TargetPod: "target"}
	for _, e := range edits {
		e(ms)
	}
	return ms
}

func pod(edits ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "target", CreationTimestamp: metav1.NewTime(t0)}}
	for _, e := range edits {
		e(p)
	}
	return p
}

func unschedulable(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: "0/2 nodes are available"}}
}

func onB(ms *virtv1.VirtualMachineInstanceMigrationState) { ms.TargetNode = "b" }

func prepared(ms *virtv1.VirtualMachineInstanceMigrationState) { ms.TargetNodeAddress = "10.0.0.2" }

func boundB(p *corev1.Pod) { p.Spec.NodeName = "b" }

// readyPod has its compute container running: its readiness may be the
// guest's, which a target cannot have yet.
func readyPod(p *corev1.Pod) {
	p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: "compute",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
}

// since records that the migration entered phase at t.
func since(phase virtv1.VirtualMachineInstanceMigrationPhase, t time.Time) func(*virtv1.VirtualMachineInstanceMigration) {
	return func(m *virtv1.VirtualMachineInstanceMigration) {
		m.Status.PhaseTransitionTimestamps = append(m.Status.PhaseTransitionTimestamps,
			virtv1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{Phase: phase, PhaseTransitionTimestamp: metav1.NewTime(t)})
	}
}

// hotplugged gives v hotplugged claims with disks, attached (a target
// device in their status) but for those named pending.
func hotplugged(v *virtv1.VirtualMachineInstance, attached string, pending ...string) *virtv1.VirtualMachineInstance {
	for _, name := range append([]string{attached}, pending...) {
		v.Spec.Volumes = append(v.Spec.Volumes, virtv1.Volume{Name: name, VolumeSource: virtv1.VolumeSource{
			PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{Hotpluggable: true,
				PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: name + "-claim"}}}})
		v.Spec.Domain.Devices.Disks = append(v.Spec.Domain.Devices.Disks, virtv1.Disk{Name: name})
		st := virtv1.VolumeStatus{Name: name, Phase: virtv1.VolumePending, HotplugVolume: &virtv1.HotplugVolumeStatus{}}
		if name == attached {
			st.Phase, st.Target = virtv1.VolumeReady, "sda"
		}
		v.Status.VolumeStatus = append(v.Status.VolumeStatus, st)
	}
	return v
}

// attachPod is the target's attachment pod of volume vol.
func attachPod(vol string, edits ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hp-" + vol, Labels: map[string]string{virtv1.AppLabel: contract.HotplugLabelValue}},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: vol, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: vol + "-claim"}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	for _, e := range edits {
		e(p)
	}
	return p
}

func podIsReady(p *corev1.Pod) {
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
}

func TestDecide(t *testing.T) {
	deleting := func(m *virtv1.VirtualMachineInstanceMigration) { now := metav1.NewTime(t0); m.DeletionTimestamp = &now }
	started := func(ms *virtv1.VirtualMachineInstanceMigrationState) {
		now := metav1.NewTime(t0)
		ms.StartTimestamp = &now
	}
	// A VMI whose data disk is a ReadWriteOnce claim: not migratable until
	// a migration copies the claim; then listed in migratedVolumes.
	onClaim := func(claim string, migrated bool) *virtv1.VirtualMachineInstance {
		v := running(nil)
		v.Spec.Volumes = []virtv1.Volume{{Name: "data", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}
		v.Status.VolumeStatus = []virtv1.VolumeStatus{{Name: "data", PersistentVolumeClaimInfo: &virtv1.PersistentVolumeClaimInfo{ClaimName: "data",
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}}}
		v.Status.Conditions = []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionFalse,
			Reason: virtv1.VirtualMachineInstanceReasonDisksNotMigratable, Message: "cannot migrate VMI: PVC data is not shared"}}
		if migrated {
			v.Status.MigratedVolumes = []virtv1.StorageMigratedVolumeInfo{{VolumeName: "data",
				SourcePVCInfo: &virtv1.PersistentVolumeClaimInfo{ClaimName: "data"}, DestinationPVCInfo: &virtv1.PersistentVolumeClaimInfo{ClaimName: migrate.CopyName("data", "m1-uid")}}}
		}
		return v
	}
	copyClaim := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: migrate.CopyName("data", "m1-uid"), Labels: map[string]string{migrate.CopyForLabel: "m1-uid"}}}
	for _, c := range []struct {
		name string
		o    migration.Observed
		want migration.Step
	}{
		{"a ReadWriteOnce claim, admitted: copied first",
			migration.Observed{Migration: mig(virtv1.MigrationPending), VMI: onClaim("data", false), Admitted: true},
			migration.Step{CopyClaims: []string{"data"}, Wait: time.Second}},
		{"a ReadWriteOnce claim, not admitted: nothing copied yet",
			migration.Observed{Migration: mig(virtv1.MigrationPending), VMI: onClaim("data", false)},
			migration.Step{Wait: time.Second}},
		{"the claim copied and named: the target pod",
			migration.Observed{Migration: mig(virtv1.MigrationPending), VMI: onClaim(migrate.CopyName("data", "m1-uid"), true), Admitted: true},
			migration.Step{CreateTarget: true, StartState: true, Phase: virtv1.MigrationScheduling}},
		{"the copy listed, the spec not renamed (a conflict): copied again",
			migration.Observed{Migration: mig(virtv1.MigrationPending), VMI: func() *virtv1.VirtualMachineInstance {
				v := onClaim("data", true)
				v.Status.Conditions[0] = virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionTrue}
				return v
			}(), Admitted: true},
			migration.Step{CopyClaims: []string{"data"}, Wait: time.Second}},
		{"another migration's volumes listed, the spec not yet renamed: wait",
			migration.Observed{Migration: mig(virtv1.MigrationPending), VMI: func() *virtv1.VirtualMachineInstance {
				v := onClaim("data", true)
				v.Status.MigratedVolumes[0].DestinationPVCInfo.ClaimName = "elsewhere"
				return v
			}(), Admitted: true},
			migration.Step{Wait: time.Second}},
		{"succeeded with copies: kept",
			migration.Observed{Migration: mig(virtv1.MigrationSucceeded), VMI: onClaim(migrate.CopyName("data", "m1-uid"), false), Copies: []corev1.PersistentVolumeClaim{copyClaim}},
			migration.Step{KeepCopies: true, RemoveFinalizer: true}},
		{"failed with copies: dropped",
			migration.Observed{Migration: mig(virtv1.MigrationFailed), VMI: onClaim(migrate.CopyName("data", "m1-uid"), true), Copies: []corev1.PersistentVolumeClaim{copyClaim}},
			migration.Step{DropCopies: true, RemoveFinalizer: true}},
		{"failed, the copies gone, the VMI still naming one: dropped",
			migration.Observed{Migration: mig(virtv1.MigrationFailed), VMI: onClaim(migrate.CopyName("data", "m1-uid"), true)},
			migration.Step{DropCopies: true, RemoveFinalizer: true}},
		{"succeeded with a claim of the target's: handed off",
			migration.Observed{Migration: mig(virtv1.MigrationSucceeded, withStateClaims("src", "tgt")), VMI: running(nil), StateClaim: &stateClaim},
			migration.Step{HandOffState: true, RemoveFinalizer: true}},
		{"succeeded, the target's claim labelled in an earlier pass: handed off (the source's deleted)",
			migration.Observed{Migration: mig(virtv1.MigrationSucceeded, withStateClaims("src", "tgt")), VMI: running(nil)},
			migration.Step{HandOffState: true, RemoveFinalizer: true}},
		{"failed with a claim of the target's: dropped",
			migration.Observed{Migration: mig(virtv1.MigrationFailed, withStateClaims("src", "tgt")), VMI: running(nil), StateClaim: &stateClaim},
			migration.Step{DropState: true, RemoveFinalizer: true}},
		{"settled: the claims are left alone",
			migration.Observed{Migration: mig(virtv1.MigrationSucceeded, withStateClaims("src", "tgt"), func(m *virtv1.VirtualMachineInstanceMigration) { m.Finalizers = nil }),
				VMI: running(nil), StateClaim: &stateClaim},
			migration.Step{}},
		{"new: Pending with the finalizer",
			migration.Observed{Migration: mig("", func(m *virtv1.VirtualMachineInstanceMigration) { m.Finalizers = nil }), VMI: running(nil)},
			migration.Step{AddFinalizer: true, Phase: virtv1.MigrationPending}},
		{"held by the limits",
			migration.Observed{Migration: mig(virtv1.MigrationPending), VMI: running(nil)},
			migration.Step{Wait: time.Second}},
		{"admitted",
			migration.Observed{Migration: mig(virtv1.MigrationPending), VMI: running(nil), Admitted: true},
			migration.Step{CreateTarget: true, StartState: true, Phase: virtv1.MigrationScheduling}},
		{"target created before, state not written",
			migration.Observed{Migration: mig(virtv1.MigrationPending), VMI: running(nil), Target: pod()},
			migration.Step{StartState: true, Phase: virtv1.MigrationScheduling}},
		{"another migration of the VMI runs",
			migration.Observed{Migration: mig(virtv1.MigrationPending), VMI: running(&virtv1.VirtualMachineInstanceMigrationState{MigrationUID: "other"}), Admitted: true},
			migration.Step{Wait: time.Second}},
		{"unschedulable, within the timeout",
			migration.Observed{Migration: mig(virtv1.MigrationScheduling), VMI: running(state()), Target: pod(unschedulable), Now: t0.Add(time.Minute)},
			migration.Step{Wait: 4 * time.Minute}},
		{"unschedulable too long",
			migration.Observed{Migration: mig(virtv1.MigrationScheduling), VMI: running(state()), Target: pod(unschedulable), Now: t0.Add(6 * time.Minute)},
			migration.Step{Phase: virtv1.MigrationFailed, DeleteTarget: true,
				FailState: "the target pod target stayed unschedulable for 5m0s: 0/2 nodes are available",
				Reason:    "the target pod target stayed unschedulable for 5m0s: 0/2 nodes are available"}},
		{"no node yet, within the pending timeout",
			migration.Observed{Migration: mig(virtv1.MigrationScheduling), VMI: running(state()), Target: pod(), Now: t0.Add(10 * time.Minute)},
			migration.Step{Wait: 5 * time.Minute}},
		{"no node for too long",
			migration.Observed{Migration: mig(virtv1.MigrationScheduling), VMI: running(state()), Target: pod(), Now: t0.Add(16 * time.Minute)},
			migration.Step{Phase: virtv1.MigrationFailed, DeleteTarget: true,
				FailState: "the target pod target got no node within 15m0s", Reason: "the target pod target got no node within 15m0s"}},
		{"scheduled, not Ready yet",
			migration.Observed{Migration: mig(virtv1.MigrationScheduled), VMI: running(state(onB)), Target: pod(boundB), Now: t0.Add(time.Minute)},
			migration.Step{Wait: 14 * time.Minute}},
		{"scheduled, never Ready",
			migration.Observed{Migration: mig(virtv1.MigrationScheduled), VMI: running(state(onB)), Target: pod(boundB), Now: t0.Add(15 * time.Minute)},
			migration.Step{Phase: virtv1.MigrationFailed, DeleteTarget: true,
				FailState: "the target pod target on node b was not Ready within 15m0s", Reason: "the target pod target on node b was not Ready within 15m0s"}},
		{"scheduled, Ready",
			migration.Observed{Migration: mig(virtv1.MigrationScheduled), VMI: running(state(onB)), Target: pod(boundB, readyPod), Now: t0.Add(time.Hour)},
			migration.Step{Phase: virtv1.MigrationPreparingTarget}},
		{"scheduled with a hotplugged disk: its attachment pod next to the target",
			migration.Observed{Migration: mig(virtv1.MigrationScheduled), VMI: hotplugged(running(state(onB)), "hot", "pending"), Target: pod(boundB), Now: t0.Add(time.Minute)},
			migration.Step{CreateAttachPods: []string{"hot"}, Wait: 14 * time.Minute}},
		{"scheduled, Ready, the attachment pod not Ready",
			migration.Observed{Migration: mig(virtv1.MigrationScheduled), VMI: hotplugged(running(state(onB)), "hot"), Target: pod(boundB, readyPod),
				AttachPods: []*corev1.Pod{attachPod("hot")}, Now: t0.Add(time.Minute)},
			migration.Step{Wait: 14 * time.Minute}},
		{"scheduled, Ready, the attachment pod never Ready",
			migration.Observed{Migration: mig(virtv1.MigrationScheduled), VMI: hotplugged(running(state(onB)), "hot"), Target: pod(boundB, readyPod),
				AttachPods: []*corev1.Pod{attachPod("hot")}, Now: t0.Add(15 * time.Minute)},
			migration.Step{Phase: virtv1.MigrationFailed, DeleteTarget: true,
				FailState: "the attachment pods of volumes hot on node b were not Ready within 15m0s",
				Reason:    "the attachment pods of volumes hot on node b were not Ready within 15m0s"}},
		{"scheduled, Ready, with its attachment pod",
			migration.Observed{Migration: mig(virtv1.MigrationScheduled), VMI: hotplugged(running(state(onB)), "hot"), Target: pod(boundB, readyPod),
				AttachPods: []*corev1.Pod{attachPod("hot", podIsReady)}, Now: t0.Add(time.Minute)},
			migration.Step{Phase: virtv1.MigrationPreparingTarget}},
		{"scheduled, the attachment pod ended",
			migration.Observed{Migration: mig(virtv1.MigrationScheduled), VMI: hotplugged(running(state(onB)), "hot"), Target: pod(boundB, readyPod),
				AttachPods: []*corev1.Pod{attachPod("hot", func(p *corev1.Pod) {
					p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Evicted", "low on memory"
				})},
				Now: t0.Add(time.Minute)},
			migration.Step{Phase: virtv1.MigrationFailed, DeleteTarget: true,
				FailState: "the attachment pod hp-hot of volume hot on the target ended (Evicted: low on memory) before the migration started",
				Reason:    "the attachment pod hp-hot of volume hot on the target ended (Evicted: low on memory) before the migration started"}},
		{"target handler preparing",
			migration.Observed{Migration: mig(virtv1.MigrationPreparingTarget, since(virtv1.MigrationPreparingTarget, t0.Add(time.Minute))),
				VMI: running(state(onB)), Target: pod(boundB, readyPod), Now: t0.Add(3 * time.Minute)},
			migration.Step{Wait: 3 * time.Minute}},
		{"target handler dead",
			migration.Observed{Migration: mig(virtv1.MigrationPreparingTarget, since(virtv1.MigrationPreparingTarget, t0.Add(time.Minute))),
				VMI: running(state(onB)), Target: pod(boundB, readyPod), Now: t0.Add(6 * time.Minute)},
			migration.Step{Phase: virtv1.MigrationFailed, DeleteTarget: true,
				FailState: "the handler of the target node b did not prepare the target within 5m0s",
				Reason:    "the handler of the target node b did not prepare the target within 5m0s"}},
		{"target prepared",
			migration.Observed{Migration: mig(virtv1.MigrationPreparingTarget), VMI: running(state(onB, prepared)), Target: pod(boundB, readyPod), Now: t0.Add(time.Hour)},
			migration.Step{Phase: virtv1.MigrationTargetReady}},
		{"source handler dead, a shorter timeout",
			migration.Observed{Migration: mig(virtv1.MigrationTargetReady, since(virtv1.MigrationPreparingTarget, t0), since(virtv1.MigrationTargetReady, t0.Add(time.Minute))),
				VMI: running(state(onB, prepared)), Target: pod(boundB, readyPod), Now: t0.Add(2 * time.Minute),
				Timeouts: migration.Timeouts{Handler: 30 * time.Second}},
			migration.Step{Phase: virtv1.MigrationFailed, DeleteTarget: true,
				FailState: "the handler of the source node a did not start the migration within 30s",
				Reason:    "the handler of the source node a did not start the migration within 30s"}},
		{"source handler started it: its own timeouts bound it",
			migration.Observed{Migration: mig(virtv1.MigrationTargetReady), VMI: running(state(onB, prepared, started)), Target: pod(boundB, readyPod), Now: t0.Add(time.Hour)},
			migration.Step{Phase: virtv1.MigrationRunning}},
		{"running for long: the handler's to end",
			migration.Observed{Migration: mig(virtv1.MigrationRunning), VMI: running(state(onB, prepared, started)), Target: pod(boundB, readyPod), Now: t0.Add(24 * time.Hour)},
			migration.Step{}},
		{"target pod gone after the start: the source says",
			migration.Observed{Migration: mig(virtv1.MigrationRunning), VMI: running(state(started))},
			migration.Step{}},
		{"deleted while running: abort",
			migration.Observed{Migration: mig(virtv1.MigrationRunning, deleting), VMI: running(state(started)), Target: pod()},
			migration.Step{RequestAbort: true}},
		{"deleted, abort requested: wait",
			migration.Observed{Migration: mig(virtv1.MigrationRunning, deleting), VMI: running(state(started, func(ms *virtv1.VirtualMachineInstanceMigrationState) { ms.AbortRequested = true })), Target: pod()},
			migration.Step{}},
		{"aborted by the source",
			migration.Observed{Migration: mig(virtv1.MigrationRunning, deleting), Target: pod(),
				VMI: running(state(started, func(ms *virtv1.VirtualMachineInstanceMigrationState) {
					ms.Completed, ms.Failed, ms.FailureReason = true, true, "aborted"
				}))},
			migration.Step{Phase: virtv1.MigrationFailed, Reason: "aborted", DeleteTarget: true}},
		{"completed though deleted: it made it",
			migration.Observed{Migration: mig(virtv1.MigrationRunning, deleting), Target: pod(),
				VMI: running(state(started, func(ms *virtv1.VirtualMachineInstanceMigrationState) { ms.Completed = true }))},
			migration.Step{Phase: virtv1.MigrationSucceeded}},
		{"succeeded: the finalizer goes, the target pod stays",
			migration.Observed{Migration: mig(virtv1.MigrationSucceeded), VMI: running(state()), Target: pod()},
			migration.Step{RemoveFinalizer: true}},
		{"failed: the target pod goes first",
			migration.Observed{Migration: mig(virtv1.MigrationFailed), VMI: running(state()), Target: pod()},
			migration.Step{DeleteTarget: true}},
		{"VMI ending",
			migration.Observed{Migration: mig(virtv1.MigrationScheduled), VMI: func() *virtv1.VirtualMachineInstance {
				v := running(state())
				v.Status.Phase = virtv1.Succeeded
				return v
			}(), Target: pod()},
			migration.Step{Phase: virtv1.MigrationFailed, DeleteTarget: true, FailState: "VirtualMachineInstance ns/vmi1 is ending (phase Succeeded)",
				Reason: "VirtualMachineInstance ns/vmi1 is ending (phase Succeeded)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.DeepEqual(t, migration.Decide(c.o), c.want)
		})
	}
}

func TestAdmit(t *testing.T) {
	cfg := migrate.DefaultConfig()
	cfg.ParallelMigrationsPerCluster, cfg.ParallelOutboundMigrationsPerNode = 3, 2
	from := func(uid, node string, phase virtv1.VirtualMachineInstanceMigrationPhase) virtv1.VirtualMachineInstanceMigration {
		return virtv1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{UID: types.UID("u-" + uid)}, Status: virtv1.VirtualMachineInstanceMigrationStatus{
			Phase: phase, MigrationState: &virtv1.VirtualMachineInstanceMigrationState{SourceNode: node}}}
	}
	me := mig(virtv1.MigrationPending)
	all := []virtv1.VirtualMachineInstanceMigration{from("1", "a", virtv1.MigrationRunning), from("2", "a", virtv1.MigrationSucceeded),
		from("3", "b", virtv1.MigrationScheduling), from("4", "a", virtv1.MigrationPending), *me}
	assert.Assert(t, migration.Admit(all, me, "a", cfg), "one of two outbound slots of a, two of three cluster slots taken")
	all = append(all, from("5", "a", virtv1.MigrationTargetReady))
	assert.Assert(t, !migration.Admit(all, me, "a", cfg), "a has two leaving")
	assert.Assert(t, !migration.Admit(all, me, "c", cfg), "the cluster has three in flight")
	cfg.ParallelMigrationsPerCluster = 4
	assert.Assert(t, migration.Admit(all, me, "c", cfg))
}

var stateClaim = corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tgt",
	Labels: map[string]string{virtv1.MigrationNameLabel: "m1"}}}

func withStateClaims(source, target string) func(*virtv1.VirtualMachineInstanceMigration) {
	return func(m *virtv1.VirtualMachineInstanceMigration) {
		m.Status.MigrationState = &virtv1.VirtualMachineInstanceMigrationState{MigrationUID: m.UID,
			Completed: true, SourcePersistentStatePVCName: source, TargetPersistentStatePVCName: target}
	}
}
