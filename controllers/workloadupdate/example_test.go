package workloadupdate_test

import (
	"fmt"

	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/workloadupdate"
)

// After an upgrade to launcher v2, with KubeVirt's LiveMigrate and Evict
// methods: the VMI that can live-migrate migrates, the other one's launcher
// pod is evicted, and the VMI already on v2 is left alone.
func ExamplePlanFor() {
	kv := &virtv1.KubeVirt{Spec: virtv1.KubeVirtSpec{WorkloadUpdateStrategy: virtv1.KubeVirtWorkloadUpdateStrategy{
		WorkloadUpdateMethods: []virtv1.WorkloadUpdateMethod{virtv1.WorkloadUpdateMethodLiveMigrate, virtv1.WorkloadUpdateMethodEvict}}}}
	plan := workloadupdate.PlanFor(workloadupdate.Inputs{
		LauncherImage: newImage,
		VMIs: []virtv1.VirtualMachineInstance{
			running("web", oldImage, true), running("db", oldImage, false), running("fresh", newImage, true)},
		Strategy:           workloadupdate.StrategyOf(kv),
		ParallelMigrations: 5,
		EvictNow:           true,
	})
	fmt.Println("outdated:", plan.Outdated)
	fmt.Println("migrate:", plan.Migrate)
	fmt.Println("evict:", plan.Evict)
	// Output:
	// outdated: 2
	// migrate: [default/web]
	// evict: [default/db]
}
