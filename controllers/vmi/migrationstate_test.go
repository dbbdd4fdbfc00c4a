package vmi

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

func TestMigrationUnderwayAndStarted(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name              string
		state             *virtv1.VirtualMachineInstanceMigrationState
		underway, started bool
	}{
		{name: "no migration"},
		{name: "target chosen", state: &virtv1.VirtualMachineInstanceMigrationState{TargetPod: "t"}, underway: true},
		{name: "sending", state: &virtv1.VirtualMachineInstanceMigrationState{StartTimestamp: &now}, underway: true, started: true},
		{name: "completed", state: &virtv1.VirtualMachineInstanceMigrationState{StartTimestamp: &now, EndTimestamp: &now, Completed: true}},
		{name: "failed", state: &virtv1.VirtualMachineInstanceMigrationState{StartTimestamp: &now, EndTimestamp: &now, Completed: true, Failed: true}},
		{name: "failed before start", state: &virtv1.VirtualMachineInstanceMigrationState{Failed: true}},
		{name: "ended, not yet marked", state: &virtv1.VirtualMachineInstanceMigrationState{StartTimestamp: &now, EndTimestamp: &now}, underway: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &virtv1.VirtualMachineInstance{Status: virtv1.VirtualMachineInstanceStatus{MigrationState: tc.state}}
			if got := MigrationUnderway(v); got != tc.underway {
				t.Errorf("MigrationUnderway = %v, want %v", got, tc.underway)
			}
			if got := MigrationStarted(v); got != tc.started {
				t.Errorf("MigrationStarted = %v, want %v", got, tc.started)
			}
		})
	}
}
