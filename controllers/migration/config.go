package migration

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	migrationsv1 "kubevirt.io/api/migrations/v1alpha1"

	"github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/virt/clusterconfig"
	"github.com/virtkit/virtkit/virt/migrate"
	"github.com/virtkit/virtkit/virt/storage/backendstorage"
)

// Config resolves the configuration a migration of v follows, as it is now:
// the KubeVirt CR's spec.configuration.migrations (in the controller's
// KubeVirt namespace), refined by the MigrationPolicy that matches v and its
// namespace (virt/migrate.Resolve). They are read uncached: a migration
// starts rarely, and follows the configuration of its start.
func (r *Reconciler) Config(ctx context.Context, v *virtv1.VirtualMachineInstance) (migrate.Config, error) {
	cluster, err := r.clusterMigrations(ctx)
	if err != nil {
		return migrate.Config{}, err
	}
	var policies migrationsv1.MigrationPolicyList
	if err := r.reader.List(ctx, &policies); err != nil {
		return migrate.Config{}, fmt.Errorf("listing MigrationPolicies: %w", err)
	}
	var ns corev1.Namespace
	if err := r.reader.Get(ctx, types.NamespacedName{Name: v.Namespace}, &ns); err != nil {
		return migrate.Config{}, fmt.Errorf("reading namespace %s: %w", v.Namespace, err)
	}
	cfg, err := migrate.Resolve(cluster, policies.Items, v, ns.Labels)
	if err != nil {
		return cfg, fmt.Errorf("the migration configuration of VirtualMachineInstance %s/%s: %w", v.Namespace, v.Name, err)
	}
	return cfg, nil
}

// clusterMigrations is the KubeVirt CR's spec.configuration.migrations, read
// uncached; nil when there is no CR or it sets none.
func (r *Reconciler) clusterMigrations(ctx context.Context) (*virtv1.MigrationConfiguration, error) {
	kv, err := clusterconfig.Get(ctx, r.reader, r.namespace)
	if err != nil {
		return nil, err
	}
	return clusterconfig.Migrations(kv), nil
}

// startState is the VMI's migrationState at the start of mig: the source
// (node and pod), the target pod, and the configuration the source's
// handler runs the migration with.
func (r *Reconciler) startState(ctx context.Context, mig *virtv1.VirtualMachineInstanceMigration, v *virtv1.VirtualMachineInstance, target *corev1.Pod) (*virtv1.VirtualMachineInstanceMigrationState, error) {
	cfg, err := r.Config(ctx, v)
	if err != nil {
		return nil, err
	}
	src, err := r.sourcePod(ctx, v)
	if err != nil {
		return nil, err
	}
	st := &virtv1.VirtualMachineInstanceMigrationState{
		MigrationUID:           mig.UID,
		SourceNode:             v.Status.NodeName,
		SourcePod:              src,
		MigrationConfiguration: cfg.APIConfiguration(),
		Mode:                   virtv1.MigrationPreCopy,
	}
	if target != nil {
		st.TargetPod = target.Name
	}
	if backendstorage.Needed(&v.Spec) {
		// As KubeVirt's: the claims the state moves between.
		st.SourcePersistentStatePVCName = backendstorage.ClaimName(&v.Status)
		if target != nil {
			st.TargetPersistentStatePVCName = vmi.StateClaimOf(target)
		}
	}
	if cfg.Policy != "" {
		name := cfg.Policy
		st.MigrationPolicyName = &name
	}
	return st, nil
}

// admitted reports whether the parallel limits let mig start now: fewer
// than parallelMigrationsPerCluster migrations in flight in the cluster and
// fewer than parallelOutboundMigrationsPerNode leaving node, the VMI's
// node. A migration counts from Scheduling until it ends. The controller
// reconciles one migration at a time, so that two cannot take the last
// slot together.
func (r *Reconciler) admitted(ctx context.Context, mig *virtv1.VirtualMachineInstanceMigration, node string) (bool, error) {
	cluster, err := r.clusterMigrations(ctx)
	if err != nil {
		return false, err
	}
	cfg, err := migrate.ClusterConfig(cluster)
	if err != nil {
		return false, fmt.Errorf("KubeVirt CR in namespace %s: %w", r.namespace, err)
	}
	var all virtv1.VirtualMachineInstanceMigrationList
	if err := r.client.List(ctx, &all); err != nil {
		return false, fmt.Errorf("listing migrations: %w", err)
	}
	return Admit(all.Items, mig, node, cfg), nil
}

// Admit reports whether mig, leaving node, may start next to the
// migrations of all, as cfg's parallel limits say.
func Admit(all []virtv1.VirtualMachineInstanceMigration, mig *virtv1.VirtualMachineInstanceMigration, node string, cfg migrate.Config) bool {
	cluster, outbound := 0, 0
	for _, m := range all {
		if m.UID == mig.UID || !inFlight(m.Status.Phase) {
			continue
		}
		cluster++
		if ms := m.Status.MigrationState; ms != nil && ms.SourceNode == node {
			outbound++
		}
	}
	return uint32(cluster) < cfg.ParallelMigrationsPerCluster && uint32(outbound) < cfg.ParallelOutboundMigrationsPerNode
}
