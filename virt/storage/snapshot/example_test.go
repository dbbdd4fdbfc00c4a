package snapshot_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/storage/snapshot"
)

// Which volumes of a VM a snapshot copies, and which it leaves out.
func ExamplePlanVolumes() {
	vm := vmWith(cdVol, pvcVol)
	plan, err := snapshot.PlanVolumes(vm, facts(claim("data-claim", "local", corev1.ClaimBound)))
	if err != nil {
		panic(err)
	}
	for _, v := range plan.Included {
		fmt.Printf("%s: claim %s, VolumeSnapshotClass %s\n", v.Name, v.Claim, v.SnapshotClass)
	}
	for _, v := range plan.Excluded {
		fmt.Printf("%s: %s\n", v.Name, v.Reason)
	}
	// Output:
	// data: claim data-claim, VolumeSnapshotClass local
	// cd: a containerDisk volume holds no claim: it is not snapshotted
}
