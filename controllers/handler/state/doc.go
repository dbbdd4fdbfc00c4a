// Package state owns the records virt-handler keeps on its node, one per
// VMI it started: what a restarted handler needs to adopt the guest and to
// tear down exactly what was set up (the storage and network plans, the
// launcher folder). It reads and writes them atomically and checks every
// record it loads, so that a damaged file cannot name another object or a
// folder outside the handler's.
package state
