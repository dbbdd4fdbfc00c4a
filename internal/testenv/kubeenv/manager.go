package kubeenv

import (
	"context"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// NewManager returns a controller-runtime manager on env for one test: no
// metrics or probe listener, no leader election, controller names that
// several managers of the test process may reuse. change, if any, adjusts
// the options (a cache limited to some namespaces...). Register the
// controllers under test, then call RunManager.
func NewManager(t testing.TB, env *ControlPlaneEnv, change ...func(*ctrl.Options)) ctrl.Manager {
	t.Helper()
	skip := true
	opts := ctrl.Options{
		Scheme:                 env.Client.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: &skip},
	}
	for _, c := range change {
		c(&opts)
	}
	mgr, err := ctrl.NewManager(env.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

// RunManager runs mgr until the test ends, and fails the test if it
// stopped on an error.
func RunManager(t testing.TB, mgr ctrl.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}
