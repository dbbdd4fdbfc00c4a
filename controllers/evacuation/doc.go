// Package evacuation is the controller half of turning a node drain into
// live migrations, as KubeVirt does for VMIs whose evictionStrategy asks for
// it. virt-api's pod eviction webhook (virtapi/eviction) refuses the
// eviction of the launcher pod of such a VMI and records the drain in its
// status.evacuationNodeName; this controller ([Reconciler]) creates a
// VirtualMachineInstanceMigration (kubevirt-evacuation-...) for every VMI
// whose evacuationNodeName is its node, and clears the field once the VMI
// runs elsewhere. The drain's retried eviction then finds the launcher pod
// ended and passes.
//
// Which strategy applies, and what the webhook answers, is decided in
// virt/migrate (EvictionStrategy, DecideEviction): the VMI's
// spec.evictionStrategy, else the KubeVirt CR's
// spec.configuration.evictionStrategy, else None. This controller acts for
// LiveMigrate and LiveMigrateIfPossible; External is left to an external
// controller, None to nothing.
//
// The drain taint is the other trigger, KubeVirt's: a node carrying the
// KubeVirt CR's migrations.nodeDrainTaintKey (kubevirt.io/drain by
// default) with effect NoSchedule has each of its VMIs that
// virt/migrate.LeavesDrainTaintedNode says leaves migrated away the same
// way, without evacuationNodeName (as KubeVirt leaves it), for as long as
// the taint stays. The controller watches Nodes' taints for that.
//
// It owns status.evacuationNodeName's clearing and the evacuation migrations
// it creates. It must not touch a VMI's spec or metadata; migrations run
// through controllers/migration like any other.
package evacuation
