package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"

	"github.com/virtkit/virtkit/internal/spawn"
	"github.com/virtkit/virtkit/internal/supervise"
)

// ControlPlane is a running control plane. Start one with Start; Stop ends it.
type ControlPlane struct {
	cfg    Config
	procs  []*supervise.Process
	spawn  *spawn.Spawner
	cancel context.CancelFunc
}

// stopGrace is how long each process gets to stop on SIGTERM.
const stopGrace = 20 * time.Second

// Start creates what is missing in cfg.DataDir (certificates, kubeconfigs),
// starts etcd, kube-apiserver, kube-scheduler and kube-controller-manager in
// that order, and returns once the apiserver answers /readyz. The processes
// are supervised until Stop or until ctx ends. On failure nothing is left
// running.
func Start(ctx context.Context, cfg Config) (_ *ControlPlane, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	for _, c := range components(cfg) {
		if _, err := os.Stat(filepath.Join(cfg.BinDir, c.name)); err != nil {
			return nil, fmt.Errorf("controlplane: %s: %w (run `make kube-bins`)", c.name, err)
		}
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("controlplane: Config.DataDir: %w", err)
	}
	if err := ensurePKI(cfg.PKI(), cfg.serviceIP()); err != nil {
		return nil, err
	}
	if err := writeKubeconfigs(cfg); err != nil {
		return nil, err
	}
	if err := writeWebhookClients(cfg); err != nil {
		return nil, err
	}
	superCtx, cancel := context.WithCancel(context.Background())
	cp := &ControlPlane{cfg: cfg, spawn: spawn.New(), cancel: cancel}
	defer func() {
		if err != nil {
			_ = cp.Stop()
		}
	}()
	for _, c := range components(cfg) {
		p, err := supervise.New(supervise.Config{Name: c.name, Path: filepath.Join(cfg.BinDir, c.name), Args: c.args,
			LogFile: filepath.Join(cfg.LogDir(), c.name+".log"), Spawner: cp.spawn, Logger: cfg.Logger.WithValues("component", c.name)})
		if err != nil {
			return cp, fmt.Errorf("controlplane: %w", err)
		}
		if err := p.Start(); err != nil {
			return cp, fmt.Errorf("controlplane: %w", err)
		}
		cp.procs = append(cp.procs, p)
		cfg.Logger.Info("started", "component", c.name)
		if c.name == "kube-apiserver" {
			// The scheduler and controller-manager only spin until it answers.
			if err := cp.waitReady(ctx); err != nil {
				return cp, err
			}
		}
		go p.Supervise(superCtx)
	}
	return cp, nil
}

// Config is the configuration the control plane runs with, defaults applied.
func (cp *ControlPlane) Config() Config { return cp.cfg }

// RESTConfig is the administrator's client configuration.
func (cp *ControlPlane) RESTConfig() (*rest.Config, error) { return cp.cfg.RESTConfig() }

// waitReady polls the apiserver's /readyz until it answers 200, a process
// died, or ctx ends.
func (cp *ControlPlane) waitReady(ctx context.Context) error {
	rc, err := cp.cfg.RESTConfig()
	if err != nil {
		return err
	}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	hc.Timeout = 5 * time.Second
	url := rc.Host + "/readyz"
	last := ""
	for {
		resp, err := hc.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		for _, p := range cp.procs {
			if !p.Status().Running {
				return fmt.Errorf("controlplane: %s exited while waiting for the apiserver; the end of %s:\n%s",
					p.Name(), p.LogFile(), supervise.Tail(p.LogFile(), 5))
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("controlplane: apiserver not ready (%s): %w", last, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Status reports, per component, whether its process runs and how often
// it was restarted.
func (cp *ControlPlane) Status() map[string]ComponentStatus {
	out := map[string]ComponentStatus{}
	for _, p := range cp.procs {
		s := p.Status()
		out[p.Name()] = ComponentStatus{Running: s.Running, Restarts: s.Restarts}
	}
	return out
}

// ComponentStatus is one process's state.
type ComponentStatus struct {
	Running  bool
	Restarts int
}

// Stop stops the processes in reverse start order and waits for each.
func (cp *ControlPlane) Stop() error {
	cp.cancel()
	var errs []error
	for i := len(cp.procs) - 1; i >= 0; i-- {
		if err := cp.procs[i].Stop(stopGrace); err != nil {
			errs = append(errs, err)
		}
	}
	cp.spawn.Close()
	return errors.Join(errs...)
}
