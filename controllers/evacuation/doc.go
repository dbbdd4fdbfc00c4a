// Package evacuation turns a node drain into live migrations, as KubeVirt
// does for VMIs whose evictionStrategy asks for it: a pod eviction webhook
// ([Webhook], served by virt-api) refuses the eviction of the launcher pod
// of such a VMI and records the drain in its status.evacuationNodeName, and
// a controller ([Reconciler]) creates a VirtualMachineInstanceMigration
// (kubevirt-evacuation-...) for every VMI whose evacuationNodeName is its
// node, and clears the field once the VMI runs elsewhere. The drain's
// retried eviction then finds the launcher pod ended and passes.
//
// Which strategy applies: the VMI's spec.evictionStrategy, else the KubeVirt
// CR's spec.configuration.evictionStrategy, else None. LiveMigrate refuses
// the eviction of a VMI that cannot migrate (its LiveMigratable condition is
// False) and says why; LiveMigrateIfPossible lets it go; External refuses
// and records the drain without migrating (for an external controller);
// None lets every eviction through.
//
// It owns status.evacuationNodeName and the evacuation migrations it
// creates. It must not touch a VMI's spec or metadata; migrations run
// through controllers/migration like any other. The drain taint
// (migrations' nodeDrainTaintKey) is not watched.
package evacuation
