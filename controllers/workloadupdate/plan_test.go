package workloadupdate_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"

	vmictl "github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/controllers/workloadupdate"
)

const (
	oldImage = "registry.example/virt-launcher:v1"
	newImage = "registry.example/virt-launcher:v2"
)

// running returns a Running VMI default/name on a launcher of image, live
// migratable or not.
func running(name, image string, migratable bool) virtv1.VirtualMachineInstance {
	v := virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Status: virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Running, LauncherContainerImageVersion: image}}
	status := corev1.ConditionFalse
	if migratable {
		status = corev1.ConditionTrue
	}
	v.Status.Conditions = []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstanceIsMigratable, Status: status}}
	return v
}

func key(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "default", Name: name}
}

func TestPlanFor(t *testing.T) {
	both := workloadupdate.Strategy{LiveMigrate: true, Evict: true, BatchSize: 2, BatchInterval: time.Minute}
	now := metav1.Now()
	deleting := running("deleting", oldImage, true)
	deleting.DeletionTimestamp = &now
	starting := running("starting", "", true)
	starting.Status.Phase = virtv1.Scheduled
	moving := running("moving", oldImage, true)
	moving.Status.MigrationState = &virtv1.VirtualMachineInstanceMigrationState{StartTimestamp: &now}
	ours := func(m virtv1.VirtualMachineInstanceMigration) virtv1.VirtualMachineInstanceMigration {
		m.Annotations = map[string]string{virtv1.WorkloadUpdateMigrationAnnotation: ""}
		return m
	}
	late := running("late", newImage, true)
	late.Status.MigrationState = &virtv1.VirtualMachineInstanceMigrationState{StartTimestamp: &now, TargetNodeDomainReadyTimestamp: &now}
	evicted := running("evicted", oldImage, false)
	evicted.UID = "uid-evicted"
	volumes := func(name string, migratable bool) virtv1.VirtualMachineInstance {
		v := running(name, newImage, migratable)
		v.Spec.Volumes = []virtv1.Volume{{Name: "data", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "new"}}}}}
		v.Status.MigratedVolumes = []virtv1.StorageMigratedVolumeInfo{{VolumeName: "data",
			SourcePVCInfo: &virtv1.PersistentVolumeClaimInfo{ClaimName: "old"}, DestinationPVCInfo: &virtv1.PersistentVolumeClaimInfo{ClaimName: "new"}}}
		v.Status.Conditions = append(v.Status.Conditions, virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceVolumesChange, Status: corev1.ConditionTrue})
		return v
	}
	grows := func(name, reason string) virtv1.VirtualMachineInstance {
		v := running(name, newImage, true)
		v.Status.Conditions = append(v.Status.Conditions, virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceVCPUChange, Status: corev1.ConditionTrue, Reason: reason})
		return v
	}
	migration := func(vmi string, phase virtv1.VirtualMachineInstanceMigrationPhase) virtv1.VirtualMachineInstanceMigration {
		return virtv1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "m-" + vmi},
			Spec: virtv1.VirtualMachineInstanceMigrationSpec{VMIName: vmi}, Status: virtv1.VirtualMachineInstanceMigrationStatus{Phase: phase}}
	}
	for _, tc := range []struct {
		name string
		in   workloadupdate.Inputs
		want workloadupdate.Plan
	}{{
		name: "a VMI grown past its pod migrates; one whose pod is big enough does not",
		in: workloadupdate.Inputs{VMIs: []virtv1.VirtualMachineInstance{grows("a", vmictl.ReasonHotplugMigrationRequired), grows("b", vmictl.ReasonHotplugPending)},
			Strategy: both, ParallelMigrations: 5, EvictNow: true},
		want: workloadupdate.Plan{Migrate: []types.NamespacedName{key("a")}, Waiting: true},
	}, {
		name: "nothing outdated",
		in:   workloadupdate.Inputs{VMIs: []virtv1.VirtualMachineInstance{running("a", newImage, true), starting}, Strategy: both, ParallelMigrations: 5, EvictNow: true},
		want: workloadupdate.Plan{},
	}, {
		name: "no methods: counted, left alone",
		in: workloadupdate.Inputs{VMIs: []virtv1.VirtualMachineInstance{running("a", oldImage, true), running("b", oldImage, false)},
			Strategy: workloadupdate.Strategy{BatchSize: 10}, ParallelMigrations: 5, EvictNow: true},
		want: workloadupdate.Plan{Outdated: 2},
	}, {
		name: "migratable ones migrate, the others are evicted",
		in: workloadupdate.Inputs{VMIs: []virtv1.VirtualMachineInstance{running("b", oldImage, false), running("a", oldImage, true), running("c", newImage, false)},
			Strategy: both, ParallelMigrations: 5, EvictNow: true},
		want: workloadupdate.Plan{Outdated: 2, Migrate: []types.NamespacedName{key("a")}, Evict: []types.NamespacedName{key("b")}, Waiting: true},
	}, {
		name: "LiveMigrate only: a VMI that cannot migrate waits",
		in: workloadupdate.Inputs{VMIs: []virtv1.VirtualMachineInstance{running("a", oldImage, true), running("b", oldImage, false)},
			Strategy: workloadupdate.Strategy{LiveMigrate: true, BatchSize: 10}, ParallelMigrations: 5, EvictNow: true},
		want: workloadupdate.Plan{Outdated: 2, Migrate: []types.NamespacedName{key("a")}, Waiting: true},
	}, {
		name: "Evict only: a migratable VMI is evicted too",
		in: workloadupdate.Inputs{VMIs: []virtv1.VirtualMachineInstance{running("a", oldImage, true)},
			Strategy: workloadupdate.Strategy{Evict: true, BatchSize: 10}, ParallelMigrations: 5, EvictNow: true},
		want: workloadupdate.Plan{Outdated: 1, Evict: []types.NamespacedName{key("a")}, Waiting: true},
	}, {
		name: "the parallel limit counts the migrations in flight",
		in: workloadupdate.Inputs{VMIs: []virtv1.VirtualMachineInstance{running("a", oldImage, true), running("b", oldImage, true), running("c", oldImage, true)},
			Migrations: []virtv1.VirtualMachineInstanceMigration{migration("other", virtv1.MigrationRunning), migration("done", virtv1.MigrationSucceeded)},
			Strategy:   both, ParallelMigrations: 2, EvictNow: true},
		want: workloadupdate.Plan{Outdated: 3, Migrate: []types.NamespacedName{key("a")}, Waiting: true},
	}, {
		name: "a batch at a time",
		in: workloadupdate.Inputs{VMIs: []virtv1.VirtualMachineInstance{running("a", oldImage, false), running("b", oldImage, false), running("c", oldImage, false)},
			Strategy: both, ParallelMigrations: 5, EvictNow: true},
		want: workloadupdate.Plan{Outdated: 3, Evict: []types.NamespacedName{key("a"), key("b")}, Waiting: true},
	}, {
		name: "before the interval",
		in: workloadupdate.Inputs{VMIs: []virtv1.VirtualMachineInstance{running("a", oldImage, false)},
			Strategy: both, ParallelMigrations: 5},
		want: workloadupdate.Plan{Outdated: 1, Waiting: true},
	}, {
		name: "migrating, named by a pending migration, or deleted: counted, not acted on",
		in: workloadupdate.Inputs{VMIs: []virtv1.VirtualMachineInstance{moving, running("queued", oldImage, true), deleting},
			Migrations: []virtv1.VirtualMachineInstanceMigration{migration("queued", virtv1.MigrationPending)},
			Strategy:   both, ParallelMigrations: 5, EvictNow: true},
		want: workloadupdate.Plan{Outdated: 2},
	}, {
		name: "a VMI whose launcher pod is being deleted is not evicted again",
		in: workloadupdate.Inputs{VMIs: []virtv1.VirtualMachineInstance{evicted, running("b", oldImage, false)},
			Strategy: both, ParallelMigrations: 5, EvictNow: true, Stopping: map[types.UID]bool{evicted.UID: true}},
		want: workloadupdate.Plan{Outdated: 2, Evict: []types.NamespacedName{key("b")}, Waiting: true},
	}, {
		name: "rolled back: its own pending migrations are cancelled, a user's and a late one are not",
		in: workloadupdate.Inputs{VMIs: []virtv1.VirtualMachineInstance{running("back", newImage, true), running("user", newImage, true), late},
			Migrations: []virtv1.VirtualMachineInstanceMigration{ours(migration("back", virtv1.MigrationScheduling)),
				migration("user", virtv1.MigrationPending), ours(migration("late", virtv1.MigrationRunning))},
			Strategy: both, ParallelMigrations: 5, EvictNow: true},
		want: workloadupdate.Plan{Abort: []types.NamespacedName{key("m-back")}, Waiting: true},
	}, {
		name: "volumes to migrate: migrated, even before the handler calls the VMI migratable, never evicted, not counted outdated",
		in: workloadupdate.Inputs{VMIs: []virtv1.VirtualMachineInstance{volumes("vol", false), volumes("vol2", true)},
			Strategy: both, ParallelMigrations: 5, EvictNow: true},
		want: workloadupdate.Plan{Migrate: []types.NamespacedName{key("vol"), key("vol2")}, Waiting: true},
	}, {
		name: "volumes listed but the spec not yet renamed: not yet",
		in: workloadupdate.Inputs{VMIs: []virtv1.VirtualMachineInstance{func() virtv1.VirtualMachineInstance {
			v := volumes("early", true)
			v.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = "old"
			return v
		}()}, Strategy: both, ParallelMigrations: 5, EvictNow: true},
		want: workloadupdate.Plan{},
	}, {
		name: "volumes to migrate under Evict alone: left alone",
		in: workloadupdate.Inputs{VMIs: []virtv1.VirtualMachineInstance{volumes("vol", true)},
			Strategy: workloadupdate.Strategy{Evict: true, BatchSize: 10}, ParallelMigrations: 5, EvictNow: true},
		want: workloadupdate.Plan{},
	}, {
		name: "volumes to migrate: its pending workload update migration is kept",
		in: workloadupdate.Inputs{VMIs: []virtv1.VirtualMachineInstance{volumes("vol", true)},
			Migrations: []virtv1.VirtualMachineInstanceMigration{ours(migration("vol", virtv1.MigrationScheduling))},
			Strategy:   both, ParallelMigrations: 5, EvictNow: true},
		want: workloadupdate.Plan{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.LauncherImage = newImage
			if diff := cmp.Diff(tc.want, workloadupdate.PlanFor(tc.in)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStrategyOf(t *testing.T) {
	size, interval := 3, metav1.Duration{Duration: 5 * time.Second}
	for _, tc := range []struct {
		name string
		ws   virtv1.KubeVirtWorkloadUpdateStrategy
		want workloadupdate.Strategy
	}{
		{name: "KubeVirt's defaults", want: workloadupdate.Strategy{BatchSize: 10, BatchInterval: time.Minute}},
		{name: "set", ws: virtv1.KubeVirtWorkloadUpdateStrategy{
			WorkloadUpdateMethods: []virtv1.WorkloadUpdateMethod{virtv1.WorkloadUpdateMethodEvict, virtv1.WorkloadUpdateMethodLiveMigrate},
			BatchEvictionSize:     &size, BatchEvictionInterval: &interval},
			want: workloadupdate.Strategy{LiveMigrate: true, Evict: true, BatchSize: 3, BatchInterval: 5 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kv := &virtv1.KubeVirt{Spec: virtv1.KubeVirtSpec{WorkloadUpdateStrategy: tc.ws}}
			if diff := cmp.Diff(tc.want, workloadupdate.StrategyOf(kv)); diff != "" {
				t.Errorf("strategy (-want +got):\n%s", diff)
			}
		})
	}
}
