// Package eviction is virt-api's pod eviction webhook, as KubeVirt's: a
// validating webhook on pods/eviction ([Webhook], at [WebhookPath]) that
// refuses to evict the launcher pod of a VMI whose eviction strategy
// migrates it (LiveMigrate, LiveMigrateIfPossible when it can migrate) or
// leaves it to an external controller (External), and records the drain in
// the VMI's status.evacuationNodeName; every other eviction passes. The
// refusal is a 429, as a PodDisruptionBudget's, so drain tools retry;
// controllers/evacuation then migrates the VMI away and the retried
// eviction finds the launcher pod ended.
//
// The decision itself is pure and lives in virt/migrate (DecideEviction);
// the KubeVirt CR is read through virt/clusterconfig. [Configuration] is the
// webhook's ValidatingWebhookConfiguration: CREATE of pods/eviction only,
// failing closed, with no side effect on dry runs.
//
// [DrainTaint] reads the other side of a drain, a node's drain taint, for
// virt-api's evacuatecancel, which refuses while a node carries it.
package eviction
