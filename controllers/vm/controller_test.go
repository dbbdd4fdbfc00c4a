package vm

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/virtkit/virtkit/internal/testenv"
)

const hold = "virtkit.test/hold" // plays the VMI controller's finalizer

func rs(s virtv1.VirtualMachineRunStrategy) *virtv1.VirtualMachineRunStrategy { return &s }
func boolp(b bool) *bool                                                      { return &b }

// TestController runs the controller in a manager against a real apiserver;
// the test plays the user, the subresource API and the handler.
func TestController(t *testing.T) {
	cl := startCluster(t)
	t.Run("RunStrategies", func(t *testing.T) { testRunStrategies(t, cl) })
	t.Run("StopRequest", func(t *testing.T) { testStopRequest(t, cl) })
	t.Run("Restart", func(t *testing.T) { testRestart(t, cl) })
	t.Run("Halted", func(t *testing.T) { testHalted(t, cl) })
	t.Run("DeleteVM", func(t *testing.T) { testDeleteVM(t, cl) })
	t.Run("CrashLoopBackOff", func(t *testing.T) { testCrashLoop(t, cl) })
	t.Run("Writes", func(t *testing.T) { testWrites(t, cl) })
	t.Run("InvalidTemplate", func(t *testing.T) { testInvalidTemplate(t, cl) })
	t.Run("ControllerRestart", func(t *testing.T) { testControllerRestart(t, cl) })
	t.Run("Instancetype", func(t *testing.T) { testInstancetype(t, cl) })
	t.Run("DataVolumeTemplates", func(t *testing.T) { testDataVolumeTemplates(t, cl) })
	t.Run("WaitingForVolumeBinding", func(t *testing.T) { testWaitingForVolumeBinding(t, cl) })
	t.Run("DeclaredHotplug", func(t *testing.T) { testDeclaredHotplug(t, cl) })
}

func testRunStrategies(t *testing.T, cl *cluster) {
	tests := []struct {
		name     string
		strategy *virtv1.VirtualMachineRunStrategy
		running  *bool
		end      virtv1.VirtualMachineInstancePhase
		recreate bool
		kept     bool // not recreated: the ended VMI stays (else it is deleted)
	}{
		{name: "Always/Succeeded", strategy: rs(virtv1.RunStrategyAlways), end: virtv1.Succeeded, recreate: true},
		{name: "Always/Failed", strategy: rs(virtv1.RunStrategyAlways), end: virtv1.Failed, recreate: true},
		{name: "running=true/Failed", running: boolp(true), end: virtv1.Failed, recreate: true},
		{name: "RerunOnFailure/Failed", strategy: rs(virtv1.RunStrategyRerunOnFailure), end: virtv1.Failed, recreate: true},
		{name: "RerunOnFailure/Succeeded", strategy: rs(virtv1.RunStrategyRerunOnFailure), end: virtv1.Succeeded},
		{name: "Once/Failed", strategy: rs(virtv1.RunStrategyOnce), end: virtv1.Failed, kept: true},
		{name: "Once/Succeeded", strategy: rs(virtv1.RunStrategyOnce), end: virtv1.Succeeded, kept: true},
		{name: "Manual/Failed", strategy: rs(virtv1.RunStrategyManual), end: virtv1.Failed, kept: true},
		{name: "Manual/Succeeded", strategy: rs(virtv1.RunStrategyManual), end: virtv1.Succeeded, kept: true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := cl.namespace(t, fmt.Sprintf("strategy-%d", i))
			vm := testVM(ns, tc.strategy, tc.running)
			key := client.ObjectKeyFromObject(vm)
			if err := cl.c.Create(context.Background(), vm); err != nil {
				t.Fatal(err)
			}
			if tc.strategy != nil && *tc.strategy == virtv1.RunStrategyManual {
				cl.waitVM(t, key, virtv1.VirtualMachineStatusStopped, nil)
				consistently(t, "no VMI before a start request", 500*time.Millisecond, func() (bool, string) {
					return cl.vmi(t, key) == nil, "a VMI was created"
				})
				cl.request(t, key, startRequest)
			}
			vmi := cl.waitVMI(t, key, "")
			vm = cl.getVM(t, key)
			checkOwned(t, vm, vmi)

			cl.waitVM(t, key, virtv1.VirtualMachineStatusStarting, func(vm *virtv1.VirtualMachine) bool {
				return vm.Status.Created && !vm.Status.Ready && len(vm.Status.StateChangeRequests) == 0
			})
			cl.setPhase(t, key, virtv1.Running, true)
			cl.waitVM(t, key, virtv1.VirtualMachineStatusRunning, func(vm *virtv1.VirtualMachine) bool { return vm.Status.Ready })

			cl.setPhase(t, key, tc.end, false)
			switch {
			case tc.recreate:
				cl.waitVMI(t, key, vmi.UID)
				cl.waitVM(t, key, virtv1.VirtualMachineStatusStarting, func(vm *virtv1.VirtualMachine) bool {
					return vm.Status.Created && vm.Status.StartFailure == nil && len(vm.Status.StateChangeRequests) == 0
				})
			case tc.kept:
				cl.waitVM(t, key, virtv1.VirtualMachineStatusStopped, func(vm *virtv1.VirtualMachine) bool {
					return vm.Status.Created && !vm.Status.Ready
				})
				consistently(t, "the ended VMI stays", time.Second, func() (bool, string) {
					got := cl.vmi(t, key)
					return got != nil && got.UID == vmi.UID && got.DeletionTimestamp == nil, fmt.Sprintf("VMI %v", got)
				})
			default:
				cl.waitNoVMI(t, key)
				cl.waitVM(t, key, virtv1.VirtualMachineStatusStopped, func(vm *virtv1.VirtualMachine) bool {
					return !vm.Status.Created && len(vm.Status.StateChangeRequests) == 0
				})
				consistently(t, "no new VMI", time.Second, func() (bool, string) { return cl.vmi(t, key) == nil, "a VMI was created" })
			}
		})
	}
}

// checkOwned checks the VMI is the VM's template's, controlled by the VM,
// and that the VM carries the controller's finalizer.
func checkOwned(t *testing.T, vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) {
	t.Helper()
	ref := metav1.GetControllerOf(vmi)
	if ref == nil || ref.UID != vm.UID || ref.Kind != "VirtualMachine" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("VMI controller reference = %+v, want the VM %s blocking owner deletion", ref, vm.UID)
	}
	if d := cmp.Diff(map[string]string{"app": "demo"}, vmi.Labels); d != "" {
		t.Errorf("VMI labels (-want +got):\n%s", d)
	}
	if vmi.Annotations[virtv1.VirtualMachineGenerationAnnotation] != fmt.Sprint(vm.Generation) {
		t.Errorf("VMI annotations = %v, want the VM generation %d", vmi.Annotations, vm.Generation)
	}
	if !controllerutil.ContainsFinalizer(vm, Finalizer) {
		t.Errorf("VM finalizers = %v, want %s", vm.Finalizers, Finalizer)
	}
	if !controllerutil.ContainsFinalizer(vmi, virtv1.VirtualMachineInstanceFinalizer) {
		t.Errorf("VMI finalizers = %v, want the VMI controller's %s from birth", vmi.Finalizers, virtv1.VirtualMachineInstanceFinalizer)
	}
}

// startRunning creates an Always VM in a new namespace and brings its VMI to Running.
func (cl *cluster) startRunning(t *testing.T, ns string, s virtv1.VirtualMachineRunStrategy, hold bool) (types.NamespacedName, *virtv1.VirtualMachineInstance) {
	t.Helper()
	vm := testVM(cl.namespace(t, ns), rs(s), nil)
	key := client.ObjectKeyFromObject(vm)
	if err := cl.c.Create(context.Background(), vm); err != nil {
		t.Fatal(err)
	}
	if s == virtv1.RunStrategyManual {
		cl.request(t, key, startRequest)
	}
	vmi := cl.waitVMI(t, key, "")
	if hold {
		cl.mutateVMI(t, key, func(v *virtv1.VirtualMachineInstance) { controllerutil.AddFinalizer(v, holdFinalizer) })
	}
	cl.setPhase(t, key, virtv1.Running, true)
	cl.waitVM(t, key, virtv1.VirtualMachineStatusRunning, nil)
	return key, vmi
}

const holdFinalizer = hold

func (cl *cluster) release(t *testing.T, key types.NamespacedName) {
	t.Helper()
	cl.mutateVMI(t, key, func(v *virtv1.VirtualMachineInstance) { controllerutil.RemoveFinalizer(v, holdFinalizer) })
}

func testStopRequest(t *testing.T, cl *cluster) {
	key, vmi := cl.startRunning(t, "stop", virtv1.RunStrategyManual, true)
	cl.request(t, key, stopRequest(vmi.UID))
	cl.waitVM(t, key, virtv1.VirtualMachineStatusStopping, func(vm *virtv1.VirtualMachine) bool {
		return len(vm.Status.StateChangeRequests) == 1 // kept until the VMI is gone
	})
	if got := cl.vmi(t, key); got == nil || got.DeletionTimestamp == nil {
		t.Fatalf("VMI after a stop request = %v, want it marked for deletion", got)
	}
	cl.release(t, key)
	cl.waitNoVMI(t, key)
	cl.waitVM(t, key, virtv1.VirtualMachineStatusStopped, func(vm *virtv1.VirtualMachine) bool {
		return !vm.Status.Created && !vm.Status.Ready && len(vm.Status.StateChangeRequests) == 0
	})
	consistently(t, "Manual does not restart", 500*time.Millisecond, func() (bool, string) { return cl.vmi(t, key) == nil, "a VMI was created" })

	cl.request(t, key, startRequest)
	cl.waitVMI(t, key, vmi.UID)
	cl.waitVM(t, key, virtv1.VirtualMachineStatusStarting, func(vm *virtv1.VirtualMachine) bool {
		return len(vm.Status.StateChangeRequests) == 0
	})
}

// A hotpluggable claim added to a running VM's template reaches its VMI
// with its disk; dropped from the template, it leaves; a change of a volume
// that is not hotpluggable is not carried.
func testDeclaredHotplug(t *testing.T, cl *cluster) {
	key, _ := cl.startRunning(t, "declared", virtv1.RunStrategyAlways, false)
	hot := virtv1.Volume{Name: "hot", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: "hot-claim"}, Hotpluggable: true}}}
	cl.mutateVM(t, key, false, func(vm *virtv1.VirtualMachine) {
		vm.Spec.Template.Spec.Volumes = append(vm.Spec.Template.Spec.Volumes, hot)
		vm.Spec.Template.Spec.Domain.Devices.Disks = append(vm.Spec.Template.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "hot"})
		vm.Spec.Template.Spec.Hostname = "not-live"
	})
	has := func(v *virtv1.VirtualMachineInstance) bool {
		vol, disk := false, false
		for _, x := range v.Spec.Volumes {
			vol = vol || x.Name == "hot"
		}
		for _, x := range v.Spec.Domain.Devices.Disks {
			disk = disk || x.Name == "hot"
		}
		return vol && disk
	}
	testenv.Eventually(context.Background(), t, "the hotplugged volume in the VMI", func() (bool, string) {
		v := cl.vmi(t, key)
		return has(v), fmt.Sprintf("volumes %+v", v.Spec.Volumes)
	})
	if v := cl.vmi(t, key); v.Spec.Hostname == "not-live" {
		t.Error("a change that is not hotplug's reached the running VMI")
	}
	cl.mutateVM(t, key, false, func(vm *virtv1.VirtualMachine) {
		vm.Spec.Template.Spec.Volumes = vm.Spec.Template.Spec.Volumes[:len(vm.Spec.Template.Spec.Volumes)-1]
		vm.Spec.Template.Spec.Domain.Devices.Disks = vm.Spec.Template.Spec.Domain.Devices.Disks[:len(vm.Spec.Template.Spec.Domain.Devices.Disks)-1]
	})
	testenv.Eventually(context.Background(), t, "the hotplugged volume out of the VMI", func() (bool, string) {
		v := cl.vmi(t, key)
		return !has(v), fmt.Sprintf("volumes %+v", v.Spec.Volumes)
	})
}

func testRestart(t *testing.T, cl *cluster) {
	key, vmi := cl.startRunning(t, "restart", virtv1.RunStrategyAlways, false)
	cl.request(t, key, stopRequest(vmi.UID), startRequest)
	cl.waitVMI(t, key, vmi.UID)
	cl.waitVM(t, key, virtv1.VirtualMachineStatusStarting, func(vm *virtv1.VirtualMachine) bool {
		return len(vm.Status.StateChangeRequests) == 0
	})
}

func testHalted(t *testing.T, cl *cluster) {
	key, vmi := cl.startRunning(t, "halted", virtv1.RunStrategyAlways, false)
	cl.mutateVM(t, key, false, func(vm *virtv1.VirtualMachine) { vm.Spec.RunStrategy = rs(virtv1.RunStrategyHalted) })
	cl.waitNoVMI(t, key)
	cl.waitVM(t, key, virtv1.VirtualMachineStatusStopped, func(vm *virtv1.VirtualMachine) bool {
		return vm.Status.RunStrategy == virtv1.RunStrategyHalted && vm.Status.ObservedGeneration == vm.Generation
	})
	// A start request on a Halted VM switches it to Always, as KubeVirt does.
	cl.request(t, key, startRequest)
	cl.waitVMI(t, key, vmi.UID)
	vm := cl.waitVM(t, key, virtv1.VirtualMachineStatusStarting, func(vm *virtv1.VirtualMachine) bool {
		return len(vm.Status.StateChangeRequests) == 0
	})
	if got := *vm.Spec.RunStrategy; got != virtv1.RunStrategyAlways {
		t.Errorf("runStrategy after a start request = %s, want Always", got)
	}
}

func testDeleteVM(t *testing.T, cl *cluster) {
	key, _ := cl.startRunning(t, "delete", virtv1.RunStrategyAlways, true)
	if err := cl.c.Delete(context.Background(), cl.getVM(t, key)); err != nil {
		t.Fatal(err)
	}
	cl.waitVM(t, key, virtv1.VirtualMachineStatusTerminating, nil)
	eventually(t, "the VMI marked for deletion", func() (bool, string) {
		got := cl.vmi(t, key)
		return got != nil && got.DeletionTimestamp != nil, fmt.Sprintf("VMI %v", got != nil)
	})
	cl.release(t, key)
	cl.waitNoVMI(t, key)
	eventually(t, "the VM gone", func() (bool, string) {
		err := cl.c.Get(context.Background(), key, &virtv1.VirtualMachine{})
		return client.IgnoreNotFound(err) == nil && err != nil, fmt.Sprint(err)
	})
}

func testCrashLoop(t *testing.T, cl *cluster) {
	vm := testVM(cl.namespace(t, "crashloop"), rs(virtv1.RunStrategyAlways), nil)
	key := client.ObjectKeyFromObject(vm)
	if err := cl.c.Create(context.Background(), vm); err != nil {
		t.Fatal(err)
	}
	vmi := cl.waitVMI(t, key, "")
	cl.setPhase(t, key, virtv1.Failed, false) // failed before it ever ran
	cl.waitVM(t, key, virtv1.VirtualMachineStatusCrashLoopBackOff, func(vm *virtv1.VirtualMachine) bool {
		f := vm.Status.StartFailure
		return f != nil && f.ConsecutiveFailCount == 1 && f.LastFailedVMIUID == vmi.UID && !vm.Status.Created
	})
	consistently(t, "no restart during the backoff", time.Second, func() (bool, string) { return cl.vmi(t, key) == nil, "a VMI was created" })

	// Past the backoff (10 s for the first failure), the VM starts again.
	cl.clock.Step(11 * time.Second)
	cl.mutateVM(t, key, false, func(vm *virtv1.VirtualMachine) { metav1.SetMetaDataAnnotation(&vm.ObjectMeta, "poke", "1") })
	second := cl.waitVMI(t, key, vmi.UID)
	cl.setPhase(t, key, virtv1.Running, true)
	cl.waitVM(t, key, virtv1.VirtualMachineStatusRunning, func(vm *virtv1.VirtualMachine) bool {
		return vm.Status.StartFailure == nil // a VMI that ran clears the count
	})
	_ = second
}

func testWrites(t *testing.T, cl *cluster) {
	ns := cl.namespace(t, "writes")
	vm := testVM(ns, rs(virtv1.RunStrategyAlways), nil)
	key := client.ObjectKeyFromObject(vm)
	if err := cl.c.Create(context.Background(), vm); err != nil {
		t.Fatal(err)
	}
	cl.waitVMI(t, key, "")
	cl.waitVM(t, key, virtv1.VirtualMachineStatusStarting, nil)
	cl.setPhase(t, key, virtv1.Running, true)
	vm = cl.waitVM(t, key, virtv1.VirtualMachineStatusRunning, func(vm *virtv1.VirtualMachine) bool { return vm.Status.Ready })
	time.Sleep(500 * time.Millisecond) // let any late reconcile show up

	writes := cl.writes.Writes(ns)
	t.Logf("writes from VM creation to Running: %v", writes)
	statusWrites := 0
	for _, w := range writes {
		if strings.HasPrefix(w, "status VirtualMachine") {
			statusWrites++
		}
	}
	if n := countOf(writes, "create VirtualMachineInstance"); n != 1 {
		t.Errorf("VMI creates = %d, want 1", n)
	}
	if n := countOf(writes, "update VirtualMachine"); n != 1 {
		t.Errorf("VM updates = %d, want 1 (the finalizer)", n)
	}
	if statusWrites > 2 {
		t.Errorf("VM status writes = %d, want at most 2 (Starting, Running)", statusWrites)
	}
	if len(writes) > 4 {
		t.Errorf("writes = %v, want at most finalizer + create + 2 status updates", writes)
	}

	// A forced reconcile with nothing new writes nothing.
	before := len(writes)
	for range 3 {
		if _, err := cl.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
	}
	if after := cl.writes.Writes(ns); len(after) != before {
		t.Errorf("forced reconciles wrote %v", after[before:])
	}
	if got := cl.getVM(t, key); got.ResourceVersion != vm.ResourceVersion {
		t.Errorf("VM resourceVersion changed from %s to %s with nothing new", vm.ResourceVersion, got.ResourceVersion)
	}
}

func countOf(list []string, s string) int {
	n := 0
	for i := slices.Index(list, s); i >= 0; i = slices.Index(list, s) {
		n++
		list = list[i+1:]
	}
	return n
}

func testInvalidTemplate(t *testing.T, cl *cluster) {
	vm := testVM(cl.namespace(t, "invalid"), rs(virtv1.RunStrategyAlways), nil)
	vm.Spec.Template.Spec.Domain.Devices.Disks = []virtv1.Disk{{Name: "root"}} // no volume of that name
	key := client.ObjectKeyFromObject(vm)
	if err := cl.c.Create(context.Background(), vm); err != nil {
		t.Fatal(err)
	}
	var failure *virtv1.VirtualMachineCondition
	cl.waitVM(t, key, virtv1.VirtualMachineStatusStopped, func(vm *virtv1.VirtualMachine) bool {
		for i, c := range vm.Status.Conditions {
			if c.Type == virtv1.VirtualMachineFailure {
				failure = &vm.Status.Conditions[i]
			}
		}
		return failure != nil
	})
	if failure.Reason != ReasonFailedCreate || !strings.Contains(failure.Message, "spec.domain.devices.disks[0]") {
		t.Errorf("Failure condition = %+v, want FailedCreate naming spec.domain.devices.disks[0]", failure)
	}
	if cl.vmi(t, key) != nil {
		t.Fatal("a VMI was created from an invalid template")
	}
	eventually(t, "a FailedCreate event", func() (bool, string) {
		var events k8sv1.EventList
		if err := cl.c.List(context.Background(), &events, client.InNamespace(key.Namespace)); err != nil {
			return false, err.Error()
		}
		for _, e := range events.Items {
			if e.Reason == ReasonFailedCreate && e.InvolvedObject.Name == key.Name && e.Type == k8sv1.EventTypeWarning {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events", len(events.Items))
	})

	// Fixing the template starts the VM and clears the Failure condition.
	cl.mutateVM(t, key, false, func(vm *virtv1.VirtualMachine) { vm.Spec.Template.Spec.Domain.Devices.Disks = nil })
	cl.waitVMI(t, key, "")
	cl.waitVM(t, key, virtv1.VirtualMachineStatusStarting, func(vm *virtv1.VirtualMachine) bool {
		for _, c := range vm.Status.Conditions {
			if c.Type == virtv1.VirtualMachineFailure {
				return false
			}
		}
		return true
	})
}

// A controller restarted while its VM changes converges on the same VMI: no
// second VMI, no lost request.
func testControllerRestart(t *testing.T, cl *cluster) {
	key, vmi := cl.startRunning(t, "restart-controller", virtv1.RunStrategyManual, false)
	cl.stopManager(t)
	cl.setPhase(t, key, virtv1.Succeeded, false)
	cl.request(t, key, stopRequest(vmi.UID), startRequest)
	cl.startManager(t)
	second := cl.waitVMI(t, key, vmi.UID)
	cl.waitVM(t, key, virtv1.VirtualMachineStatusStarting, func(vm *virtv1.VirtualMachine) bool {
		return len(vm.Status.StateChangeRequests) == 0
	})
	consistently(t, "one VMI", 500*time.Millisecond, func() (bool, string) {
		got := cl.vmi(t, key)
		return got != nil && got.UID == second.UID, fmt.Sprintf("VMI %v", got)
	})
}
