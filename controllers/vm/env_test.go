package vm

import (
	"context"
	"fmt"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	clocktesting "k8s.io/utils/clock/testing"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
)

// cluster is a real apiserver with the VM controller running in a manager.
type cluster struct {
	c      client.Client // direct client, plays the user, the VMI controller and the handler
	cfg    *rest.Config
	r      *Reconciler
	writes *countingClient
	clock  *clocktesting.FakeClock
	stop   func() error
}

// startCluster starts etcd, kube-apiserver and a manager running the VM
// controller; all stop when the test ends.
func startCluster(t *testing.T) *cluster {
	env := kubeenv.ControlPlane(t)
	cl := &cluster{c: env.Client, cfg: env.Config, clock: clocktesting.NewFakeClock(time.Now())}
	cl.startManager(t)
	t.Cleanup(func() { cl.stopManager(t) })
	return cl
}

// startManager starts a manager with a new VM reconciler (nothing carried
// over from an earlier one but the write log).
func (cl *cluster) startManager(t *testing.T) {
	t.Helper()
	skip := true
	mgr, err := ctrl.NewManager(cl.cfg, ctrl.Options{
		Scheme:                 cl.c.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
		Controller:             config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		t.Fatal(err)
	}
	if cl.writes == nil {
		cl.writes = &countingClient{Describe: describeWrite}
	}
	cl.writes.Client = mgr.GetClient()
	cl.r = New(WithClient(cl.writes, mgr.GetAPIReader()), WithClock(cl.clock), WithJitter(func(int) int { return 0 }))
	if err := cl.r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("vmi-finalizer-release").For(&virtv1.VirtualMachineInstance{}).
		Complete(releaseFinalizer{cl.c}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	cl.stop = func() error { cancel(); return <-done }
}

// releaseFinalizer plays the VMI controller's part in a deletion: VMIs are
// born with its finalizer (vmiFor), and it lets a deleted VMI go once its
// pod is gone, which here (no pods) is at once.
type releaseFinalizer struct{ c client.Client }

func (r releaseFinalizer) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vmi := &virtv1.VirtualMachineInstance{}
	if err := r.c.Get(ctx, req.NamespacedName, vmi); err != nil || vmi.DeletionTimestamp == nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if controllerutil.RemoveFinalizer(vmi, virtv1.VirtualMachineInstanceFinalizer) {
		return ctrl.Result{}, client.IgnoreNotFound(r.c.Update(ctx, vmi))
	}
	return ctrl.Result{}, nil
}

// stopManager stops the running manager.
func (cl *cluster) stopManager(t *testing.T) {
	t.Helper()
	if cl.stop == nil {
		return
	}
	if err := cl.stop(); err != nil {
		t.Errorf("manager: %v", err)
	}
	cl.stop = nil
}

// namespace creates a namespace for one subtest.
func (cl *cluster) namespace(t *testing.T, name string) string {
	t.Helper()
	ns := &k8sv1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := cl.c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return name
}

// testVM is a small valid VM in ns with the given strategy (nil: running
// is set instead, from runningField).
func testVM(ns string, s *virtv1.VirtualMachineRunStrategy, runningField *bool) *virtv1.VirtualMachine {
	return &virtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "vm1", Namespace: ns},
		Spec: virtv1.VirtualMachineSpec{
			RunStrategy: s,
			Running:     runningField,
			Template: &virtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "demo"}},
				Spec: virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{
					Resources: virtv1.ResourceRequirements{Requests: k8sv1.ResourceList{k8sv1.ResourceMemory: resource.MustParse("64Mi")}},
				}},
			},
		},
	}
}

// eventually polls cond every 50 ms for up to 15 s.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	testenv.EventuallyEvery(testenv.Within(t, 15*time.Second), t, 50*time.Millisecond, what, cond)
}

// consistently checks cond holds for d.
func consistently(t *testing.T, what string, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	testenv.Consistently(testenv.Within(t, d), t, 50*time.Millisecond, what, cond)
}

func (cl *cluster) getVM(t *testing.T, key types.NamespacedName) *virtv1.VirtualMachine {
	t.Helper()
	vm := &virtv1.VirtualMachine{}
	if err := cl.c.Get(context.Background(), key, vm); err != nil {
		t.Fatal(err)
	}
	return vm
}

// vmi returns the VMI at key, nil when there is none.
func (cl *cluster) vmi(t *testing.T, key types.NamespacedName) *virtv1.VirtualMachineInstance {
	t.Helper()
	vmi := &virtv1.VirtualMachineInstance{}
	err := cl.c.Get(context.Background(), key, vmi)
	if client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	if err != nil {
		return nil
	}
	return vmi
}

// waitVM waits until the VM's printable status is want and check (if any) holds.
func (cl *cluster) waitVM(t *testing.T, key types.NamespacedName, want virtv1.VirtualMachinePrintableStatus,
	check func(*virtv1.VirtualMachine) bool) *virtv1.VirtualMachine {
	t.Helper()
	var vm *virtv1.VirtualMachine
	eventually(t, fmt.Sprintf("VM %s printableStatus %s", key, want), func() (bool, string) {
		vm = cl.getVM(t, key)
		st := vm.Status
		return st.PrintableStatus == want && (check == nil || check(vm)),
			fmt.Sprintf("printableStatus=%s created=%v ready=%v requests=%v startFailure=%v", st.PrintableStatus, st.Created, st.Ready, st.StateChangeRequests, st.StartFailure)
	})
	return vm
}

// waitVMI waits for a VMI at key other than notUID, not being deleted.
func (cl *cluster) waitVMI(t *testing.T, key types.NamespacedName, notUID types.UID) *virtv1.VirtualMachineInstance {
	t.Helper()
	var vmi *virtv1.VirtualMachineInstance
	eventually(t, "a new VMI "+key.String(), func() (bool, string) {
		vmi = cl.vmi(t, key)
		if vmi == nil {
			return false, "no VMI"
		}
		return vmi.UID != notUID && vmi.DeletionTimestamp == nil, fmt.Sprintf("VMI %s phase %s", vmi.UID, vmi.Status.Phase)
	})
	return vmi
}

// waitNoVMI waits until no VMI is at key.
func (cl *cluster) waitNoVMI(t *testing.T, key types.NamespacedName) {
	t.Helper()
	eventually(t, "no VMI "+key.String(), func() (bool, string) {
		vmi := cl.vmi(t, key)
		if vmi == nil {
			return true, ""
		}
		return false, fmt.Sprintf("VMI %s phase %s deleting=%v", vmi.UID, vmi.Status.Phase, vmi.DeletionTimestamp != nil)
	})
}

// setPhase plays the handler: it moves the VMI to phase through the status
// subresource, with KubeVirt's phase transition timestamps and Ready condition.
func (cl *cluster) setPhase(t *testing.T, key types.NamespacedName, phase virtv1.VirtualMachineInstancePhase, ready bool) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		vmi := &virtv1.VirtualMachineInstance{}
		if err := cl.c.Get(context.Background(), key, vmi); err != nil {
			return err
		}
		vmi.Status.Phase = phase
		vmi.Status.PhaseTransitionTimestamps = append(vmi.Status.PhaseTransitionTimestamps,
			virtv1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: phase, PhaseTransitionTimestamp: metav1.Now()})
		status := k8sv1.ConditionFalse
		if ready {
			status = k8sv1.ConditionTrue
		}
		vmi.Status.Conditions = []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstanceReady, Status: status}}
		return cl.c.Status().Update(context.Background(), vmi)
	})
	if err != nil {
		t.Fatalf("setting VMI %s phase %s: %v", key, phase, err)
	}
}

// request plays the subresource API: it appends state change requests.
func (cl *cluster) request(t *testing.T, key types.NamespacedName, reqs ...virtv1.VirtualMachineStateChangeRequest) {
	t.Helper()
	cl.mutateVM(t, key, true, func(vm *virtv1.VirtualMachine) {
		vm.Status.StateChangeRequests = append(vm.Status.StateChangeRequests, reqs...)
	})
}

// mutateVM changes the VM (its status when status is set), retrying conflicts.
func (cl *cluster) mutateVM(t *testing.T, key types.NamespacedName, status bool, f func(*virtv1.VirtualMachine)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		vm := cl.getVM(t, key)
		f(vm)
		if status {
			return cl.c.Status().Update(context.Background(), vm)
		}
		return cl.c.Update(context.Background(), vm)
	})
	if err != nil {
		t.Fatalf("updating VM %s: %v", key, err)
	}
}

// mutateVMI changes the VMI's metadata or spec, retrying conflicts.
func (cl *cluster) mutateVMI(t *testing.T, key types.NamespacedName, f func(*virtv1.VirtualMachineInstance)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		vmi := &virtv1.VirtualMachineInstance{}
		if err := cl.c.Get(context.Background(), key, vmi); err != nil {
			return err
		}
		f(vmi)
		return cl.c.Update(context.Background(), vmi)
	})
	if err != nil {
		t.Fatalf("updating VMI %s: %v", key, err)
	}
}

func stopRequest(uid types.UID) virtv1.VirtualMachineStateChangeRequest {
	return virtv1.VirtualMachineStateChangeRequest{Action: virtv1.StopRequest, UID: &uid}
}

var startRequest = virtv1.VirtualMachineStateChangeRequest{Action: virtv1.StartRequest}

// countingClient records the writes the controller makes; describeWrite
// adds what a status write sets.
type countingClient = kubeenv.WriteCounter

func describeWrite(verb string, obj client.Object) string {
	if vm, ok := obj.(*virtv1.VirtualMachine); ok && verb == "status" {
		return string(vm.Status.PrintableStatus)
	}
	return ""
}
