package handler_test

import (
	"context"
	"fmt"
	"os"

	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/virtkit/virtkit/controllers/handler"
	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virt/domain"
	domainfake "github.com/virtkit/virtkit/virt/domain/fake"
	"github.com/virtkit/virtkit/virt/launcher"
)

// Run a node's handler in a controller-runtime manager whose VMI cache holds
// the node's VMIs only. daemons/virt-handler passes virt/domain/libvirt's
// New as the connector (the only cgo); any domain.Manager works.
func ExampleReconciler_SetupWithManager() {
	node := os.Getenv("NODE_NAME")
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme: scheme.New(),
		Cache:  handler.CacheOptions(node), // status.nodeName=<node>, filtered by the apiserver
	})
	if err != nil {
		panic(err)
	}
	r, err := handler.New(handler.Config{NodeName: node, Emulation: true},
		handler.WithConnector(func(ctx context.Context, uri string) (domain.Manager, error) {
			return domainfake.New(), nil // domainlibvirt.New(ctx, uri) in the daemon
		}))
	if err != nil {
		panic(err)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		panic(err)
	}
	// r is also the node API's nodeapi.Ops: nodeapi.NewServer(r).
	_ = mgr.Start(ctrl.SetupSignalHandler())
}

// How a VMI ends when its launcher has ended, by the launcher's exit code.
func ExampleLauncherEnding() {
	for _, r := range []launcher.Result{
		{Code: launcher.ExitOK, Reason: "guest shut down"},
		{Code: launcher.ExitGuestCrashed, Reason: "guest crashed (panicked)"},
	} {
		e := handler.LauncherEnding(r)
		fmt.Printf("%d %s %q\n", r.Code, e.Phase, e.Reason)
	}
	fmt.Println(handler.LauncherEnding(launcher.Result{Code: 4}).Phase == virtv1.Failed)
	// Output:
	// 0 Succeeded ""
	// 2 Failed "GuestCrashed"
	// true
}
