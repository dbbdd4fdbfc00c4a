// Package migrate resolves the effective migration configuration (cluster
// defaults overridden by a matching MigrationPolicy; pure) and runs a
// monitored live migration between two domain Managers.
//
// Status: not implemented yet (issue 9).
package migrate
