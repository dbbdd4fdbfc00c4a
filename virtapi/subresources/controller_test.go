package subresources_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/virtkit/virtkit/controllers/vm"
)

// What the API writes is what controllers/vm acts on: start, stop and
// restart through the aggregator make the VM controller create and delete
// the VMI.
func TestVMControllerActsOnTheRequests(t *testing.T) {
	w := newWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	startVMController(t, w)

	w.createVM(t, "manual", virtv1.RunStrategyManual)
	w.createVM(t, "always", virtv1.RunStrategyAlways)
	vmiUID := func(name string) (string, error) {
		vmi := &virtv1.VirtualMachineInstance{}
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, vmi); err != nil {
			return "", err
		}
		if vmi.DeletionTimestamp != nil {
			return "", fmt.Errorf("VMI %s is being deleted", name)
		}
		return string(vmi.UID), nil
	}
	gone := func(name string) error {
		if _, err := vmiUID(name); err == nil {
			return fmt.Errorf("VMI %s still exists", name)
		}
		return nil
	}
	noRequests := func(name string) error {
		if r := w.getVM(t, name).Status.StateChangeRequests; len(r) > 0 {
			return fmt.Errorf("VM %s still has requests %v", name, r)
		}
		return nil
	}

	if code, st := call(t, w.alice, "PUT", vmPath("manual", "start"), `{}`); code != 202 {
		t.Fatalf("start: %d %s", code, st.Message)
	}
	eventually(t, 30*time.Second, func() error {
		if _, err := vmiUID("manual"); err != nil {
			return err
		}
		return noRequests("manual")
	})
	// The VMI is not Running (no handler here), but it exists: stop applies.
	if code, st := call(t, w.alice, "PUT", vmPath("manual", "stop"), `{}`); code != 202 {
		t.Fatalf("stop: %d %s", code, st.Message)
	}
	eventually(t, 30*time.Second, func() error {
		if err := gone("manual"); err != nil {
			return err
		}
		return noRequests("manual")
	})

	var first string
	eventually(t, 30*time.Second, func() (err error) { first, err = vmiUID("always"); return err })
	if code, st := call(t, w.alice, "PUT", vmPath("always", "restart"), `{}`); code != 202 {
		t.Fatalf("restart: %d %s", code, st.Message)
	}
	eventually(t, 30*time.Second, func() error {
		uid, err := vmiUID("always")
		if err != nil {
			return err
		}
		if uid == first {
			return fmt.Errorf("VMI not replaced yet")
		}
		return noRequests("always")
	})
}

// startVMController runs controllers/vm, plus a stand-in for the VMI
// controller that lets deleted VMIs go.
func startVMController(t *testing.T, w *world) {
	t.Helper()
	mgr, err := ctrl.NewManager(w.cp.Config, ctrl.Options{Scheme: w.c.Scheme(),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	must(t, err)
	must(t, vm.New().SetupWithManager(mgr))
	must(t, ctrl.NewControllerManagedBy(mgr).Named("vmi-release").For(&virtv1.VirtualMachineInstance{}).
		Complete(releaser{w.c}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		must(t, <-done)
	})
}

// releaser removes the VMI controller's finalizer from deleted VMIs.
type releaser struct{ c client.Client }

func (r releaser) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vmi := &virtv1.VirtualMachineInstance{}
	if err := r.c.Get(ctx, req.NamespacedName, vmi); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if vmi.DeletionTimestamp == nil || !controllerutil.RemoveFinalizer(vmi, virtv1.VirtualMachineInstanceFinalizer) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, client.IgnoreNotFound(r.c.Update(ctx, vmi))
}
