package workloadupdate

import (
	"sort"

	"time"

	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"

	vmictl "github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/virt/migrate"
)

// KubeVirt's defaults for spec.workloadUpdateStrategy.
const (
	DefaultBatchEvictionSize     = 10
	DefaultBatchEvictionInterval = time.Minute
)

// Strategy is the KubeVirt CR's spec.workloadUpdateStrategy with KubeVirt's
// defaults applied.
type Strategy struct {
	// LiveMigrate and Evict are the methods listed; with both, a VMI that
	// can live-migrate does, and only the others are evicted.
	LiveMigrate, Evict bool
	// BatchSize VMIs are evicted every BatchInterval.
	BatchSize     int
	BatchInterval time.Duration
}

// StrategyOf reads kv's workload update strategy.
func StrategyOf(kv *virtv1.KubeVirt) Strategy {
	s := Strategy{BatchSize: DefaultBatchEvictionSize, BatchInterval: DefaultBatchEvictionInterval}
	ws := kv.Spec.WorkloadUpdateStrategy
	for _, m := range ws.WorkloadUpdateMethods {
		switch m {
		case virtv1.WorkloadUpdateMethodLiveMigrate:
			s.LiveMigrate = true
		case virtv1.WorkloadUpdateMethodEvict:
			s.Evict = true
		}
	}
	if ws.BatchEvictionSize != nil {
		s.BatchSize = *ws.BatchEvictionSize
	}
	if ws.BatchEvictionInterval != nil {
		s.BatchInterval = ws.BatchEvictionInterval.Duration
	}
	return s
}

// Inputs is what a plan is made from.
type Inputs struct {
	// LauncherImage is the image new launcher pods get.
	LauncherImage string
	VMIs          []virtv1.VirtualMachineInstance
	Migrations    []virtv1.VirtualMachineInstanceMigration
	Strategy      Strategy
	// ParallelMigrations is the cluster's limit of migrations in flight
	// (spec.configuration.migrations.parallelMigrationsPerCluster).
	ParallelMigrations int
	// EvictNow says the batch interval has passed since the last eviction
	// batch.
	EvictNow bool
	// Stopping holds the UIDs of the VMIs whose launcher pod is being
	// deleted (an eviction passed): counted, not acted on again.
	Stopping map[types.UID]bool
}

// Plan is what to do now.
type Plan struct {
	// Outdated counts the running VMIs on an outdated launcher, those
	// already migrating included.
	Outdated int
	// Migrate and Evict name the VMIs to live-migrate and whose launcher pod
	// to evict, in name order.
	Migrate, Evict []types.NamespacedName
	// Abort names the workload update migrations to delete (cancel): their
	// VMI is no longer outdated (the launcher image went back to its own,
	// a rollback) and the target's domain is not ready yet.
	Abort []types.NamespacedName
	// Waiting says outdated VMIs are left that a later look may act on.
	Waiting bool
}

// Outdated reports whether vmi runs on a launcher of another image than
// launcherImage. A VMI whose image is not recorded yet (it is starting, or
// its migration has not completed) is not.
func Outdated(vmi *virtv1.VirtualMachineInstance, launcherImage string) bool {
	img := vmi.Status.LauncherContainerImageVersion
	return img != "" && img != launcherImage
}

// PlanFor decides which outdated VMIs to move now. It considers running
// VMIs only, never one being deleted; a VMI that migrates, or that a
// migration not yet ended names, is counted but not acted on.
//
// A VMI whose volumes wait for their volume migration (its VolumesChange
// condition is True) is migrated too, as in KubeVirt, when the strategy
// lists LiveMigrate; it is never evicted for it, unlike in KubeVirt: a
// restart would start the guest on the new claims before anything was
// copied into them.
func PlanFor(in Inputs) Plan {
	busy := map[types.NamespacedName]bool{}
	ours := map[types.NamespacedName][]types.NamespacedName{} // VMI: its workload update migrations
	running := 0
	for _, m := range in.Migrations {
		if final(m.Status.Phase) || m.DeletionTimestamp != nil {
			continue
		}
		vmi := types.NamespacedName{Namespace: m.Namespace, Name: m.Spec.VMIName}
		busy[vmi] = true
		if _, mine := m.Annotations[virtv1.WorkloadUpdateMigrationAnnotation]; mine {
			ours[vmi] = append(ours[vmi], types.NamespacedName{Namespace: m.Namespace, Name: m.Name})
		}
		if m.Status.Phase != "" && m.Status.Phase != virtv1.MigrationPending {
			running++
		}
	}
	var p Plan
	var migratable, evictable []types.NamespacedName
	for i := range in.VMIs {
		v := &in.VMIs[i]
		if !v.IsRunning() || v.DeletionTimestamp != nil {
			continue
		}
		key := types.NamespacedName{Namespace: v.Namespace, Name: v.Name}
		volumes := migrate.VolumesChanging(v) && len(v.Status.MigratedVolumes) > 0 && migrate.VolumesReady(v)
		grows := vmictl.GrowsByMigration(v)
		outdated := Outdated(v, in.LauncherImage)
		if !outdated && !volumes && !grows {
			if ms := v.Status.MigrationState; ms == nil || ms.TargetNodeDomainReadyTimestamp == nil {
				p.Abort = append(p.Abort, ours[key]...)
			}
			continue
		}
		if outdated {
			p.Outdated++
		}
		if busy[key] || vmictl.MigrationStarted(v) || in.Stopping[v.UID] {
			continue
		}
		switch {
		case in.Strategy.LiveMigrate && (v.IsMigratable() && (outdated || grows) || volumes):
			migratable = append(migratable, key)
		case in.Strategy.Evict && outdated:
			evictable = append(evictable, key)
		}
	}
	byName := func(s []types.NamespacedName) {
		sort.Slice(s, func(i, j int) bool { return s[i].String() < s[j].String() })
	}
	byName(migratable)
	byName(evictable)
	byName(p.Abort)
	room := max(in.ParallelMigrations-running, 0)
	p.Migrate = migratable[:min(room, len(migratable))]
	if in.EvictNow {
		p.Evict = evictable[:min(max(in.Strategy.BatchSize, 0), len(evictable))]
	}
	p.Waiting = len(migratable) > len(p.Migrate) || len(evictable) > len(p.Evict) || len(p.Migrate) > 0 || len(p.Evict) > 0 || len(p.Abort) > 0
	return p
}

// final reports whether a migration in phase p has ended.
func final(p virtv1.VirtualMachineInstanceMigrationPhase) bool {
	return p == virtv1.MigrationSucceeded || p == virtv1.MigrationFailed
}
