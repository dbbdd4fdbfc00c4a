package vm

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

// The VM's record of a volume migration follows its VMI as KubeVirt's
// syncVolumeMigration makes it.
func TestVolumeMigrationStatus(t *testing.T) {
	now := metav1.NewTime(t0)
	migration := virtv1.UpdateVolumesStrategyMigration
	volumesChange := virtv1.VirtualMachineConditionType(virtv1.VirtualMachineInstanceVolumesChange)
	vmOn := func(claim string, strategy *virtv1.UpdateVolumesStrategy, conds ...virtv1.VirtualMachineCondition) *virtv1.VirtualMachine {
		return &virtv1.VirtualMachine{
			Spec: virtv1.VirtualMachineSpec{UpdateVolumesStrategy: strategy, Template: &virtv1.VirtualMachineInstanceTemplateSpec{Spec: virtv1.VirtualMachineInstanceSpec{
				Volumes: []virtv1.Volume{{Name: "data", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
					PersistentVolumeClaimVolumeSource: k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}}}},
			Status: virtv1.VirtualMachineStatus{Conditions: conds, VolumeUpdateState: &virtv1.VolumeUpdateState{VolumeMigrationState: &virtv1.VolumeMigrationState{
				MigratedVolumes: []virtv1.StorageMigratedVolumeInfo{{VolumeName: "data",
					SourcePVCInfo: &virtv1.PersistentVolumeClaimInfo{ClaimName: "old"}, DestinationPVCInfo: &virtv1.PersistentVolumeClaimInfo{ClaimName: "new"}}}}}},
		}
	}
	vmiWith := func(phase virtv1.VirtualMachineInstancePhase, conds ...virtv1.VirtualMachineInstanceCondition) *virtv1.VirtualMachineInstance {
		return &virtv1.VirtualMachineInstance{Status: virtv1.VirtualMachineInstanceStatus{Phase: phase, Conditions: conds}}
	}
	changing := virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceVolumesChange, Status: k8sv1.ConditionTrue, Message: MessageMigrateVolumes}
	mirrored := virtv1.VirtualMachineCondition{Type: volumesChange, Status: k8sv1.ConditionTrue, Message: MessageMigrateVolumes}
	tests := []struct {
		name      string
		vm        *virtv1.VirtualMachine
		vmi       *virtv1.VirtualMachineInstance
		wantState bool // volumeMigrationState kept
		want      []virtv1.VirtualMachineCondition
	}{{
		name: "in progress: the VMI's VolumesChange is mirrored", vm: vmOn("new", &migration), vmi: vmiWith(virtv1.Running, changing),
		wantState: true, want: []virtv1.VirtualMachineCondition{mirrored},
	}, {
		name: "done: the condition goes, the record stays", vm: vmOn("new", &migration, mirrored), vmi: vmiWith(virtv1.Running),
		wantState: true,
	}, {
		name: "the VM back on the source claims: the record goes", vm: vmOn("old", &migration, mirrored), vmi: vmiWith(virtv1.Running, changing),
	}, {
		name: "the strategy dropped: the record goes", vm: vmOn("new", nil), vmi: vmiWith(virtv1.Running),
	}, {
		name: "the VMI ended during the migration: manual recovery", vm: vmOn("new", &migration, mirrored), vmi: vmiWith(virtv1.Failed, changing),
		wantState: true, want: []virtv1.VirtualMachineCondition{mirrored,
			{Type: virtv1.VirtualMachineManualRecoveryRequired, Status: k8sv1.ConditionTrue, Reason: ReasonManualRecovery, LastTransitionTime: now}},
	}, {
		name: "the VMI gone during the migration: manual recovery", vm: vmOn("new", &migration, mirrored),
		wantState: true, want: []virtv1.VirtualMachineCondition{mirrored,
			{Type: virtv1.VirtualMachineManualRecoveryRequired, Status: k8sv1.ConditionTrue, Reason: ReasonManualRecovery, LastTransitionTime: now}},
	}, {
		name: "cancelled: the record goes",
		vm:   vmOn("new", &migration),
		vmi: vmiWith(virtv1.Running, virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceVolumesChange, Status: k8sv1.ConditionFalse,
			Reason: virtv1.VirtualMachineInstanceReasonVolumesChangeCancellation}),
		want: []virtv1.VirtualMachineCondition{{Type: volumesChange, Status: k8sv1.ConditionFalse, Reason: virtv1.VirtualMachineInstanceReasonVolumesChangeCancellation}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.vm.Status.DeepCopy()
			volumeMigrationStatus(st, tt.vm, tt.vmi, now)
			if kept := st.VolumeUpdateState != nil && st.VolumeUpdateState.VolumeMigrationState != nil; kept != tt.wantState {
				t.Errorf("volumeMigrationState kept: %v, want %v", kept, tt.wantState)
			}
			if diff := cmp.Diff(tt.want, st.Conditions, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}
