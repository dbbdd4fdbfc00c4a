package vmi

import virtv1 "kubevirt.io/api/core/v1"

// MigrationUnderway reports whether a migration of vmi is on its way: a
// target has been chosen (the VMI carries a migration state) and the
// migration has neither completed nor failed. While it is, the VMI's
// devices, networks and pod must not change under it: the target plans
// what the spec had when it was chosen.
func MigrationUnderway(vmi *virtv1.VirtualMachineInstance) bool {
	ms := vmi.Status.MigrationState
	return ms != nil && !ms.Completed && !ms.Failed
}

// MigrationStarted reports whether a migration of vmi is underway and its
// source has begun to send (the state's start is written and its end is
// not): the window in which KubeVirt prints a VM as Migrating and counts
// the VMI as migrating.
func MigrationStarted(vmi *virtv1.VirtualMachineInstance) bool {
	ms := vmi.Status.MigrationState
	return MigrationUnderway(vmi) && ms.StartTimestamp != nil && ms.EndTimestamp == nil
}
