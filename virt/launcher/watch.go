package launcher

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/virtkit/virtkit/virt/domain"
)

// domainWatch is what the watcher needs of a domain.Manager: one domain's
// state, and ending it on a stop request.
type domainWatch interface {
	State(ctx context.Context, name string) (domain.State, domain.Reason, error)
	Shutdown(ctx context.Context, name string) error
	Destroy(ctx context.Context, name string) error
}

var _ domainWatch = domain.Manager(nil)

// watcher follows one domain's state through a Manager.
type watcher struct {
	m    domainWatch
	name string
	poll time.Duration
	log  logr.Logger
	// started is set once the domain was seen running, paused or shutting down.
	started bool
}

// follow reads the domain's state until, after having started, it is off
// (ended true, with the Result), libvirtd died (likewise), or ctx ended
// (ended false: a stop request).
func (w *watcher) follow(ctx context.Context, daemonDone <-chan struct{}) (r Result, ended bool) {
	tick := time.NewTicker(w.poll)
	defer tick.Stop()
	for {
		if r, ended := w.check(ctx); ended {
			return r, true
		}
		select {
		case <-ctx.Done():
			return Result{}, false
		case <-daemonDone:
			return Result{Code: ExitLibvirtdDied, Reason: "libvirtd exited under the launcher"}, true
		case <-tick.C:
		}
	}
}

// check reads the domain's state once.
func (w *watcher) check(ctx context.Context) (Result, bool) {
	callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, reason, err := w.m.State(callCtx, w.name)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		// Not defined yet, or a transient domain that ended.
		if w.started {
			return Result{Code: ExitOK, Reason: "domain " + w.name + " is gone"}, true
		}
		return Result{}, false
	case err != nil:
		w.log.V(1).Info("reading the domain state failed", "domain", w.name, "error", err.Error())
		return Result{}, false
	}
	switch st {
	case domain.StateRunning, domain.StatePaused, domain.StateBlocked, domain.StateShutdown, domain.StatePMSuspended:
		if !w.started {
			w.log.Info("guest started", "domain", w.name)
		}
		w.started = true
		return Result{}, false
	case domain.StateCrashed:
		return Result{Code: ExitGuestCrashed, Reason: "guest crashed (" + domain.ReasonString(st, reason) + ")"}, true
	case domain.StateShutoff:
		if !w.started {
			return Result{}, false // defined, not started yet
		}
		return endResult(reason), true
	}
	return Result{}, false
}

// endResult maps how a started domain shut off to the launcher's Result.
func endResult(reason domain.Reason) Result {
	why := domain.ReasonString(domain.StateShutoff, reason)
	switch reason {
	case domain.ReasonShutoffShutdown:
		return Result{Code: ExitOK, Reason: "guest shut down"}
	case domain.ReasonShutoffMigrated:
		return Result{Code: ExitOK, Reason: "guest migrated away"}
	case domain.ReasonShutoffSaved:
		return Result{Code: ExitOK, Reason: "guest saved"}
	case domain.ReasonShutoffDestroyed:
		return Result{Code: ExitGuestDestroyed, Reason: "domain destroyed by someone other than the launcher"}
	case domain.ReasonShutoffCrashed:
		return Result{Code: ExitGuestCrashed, Reason: "QEMU ended unexpectedly (shut off, reason crashed)"}
	}
	return Result{Code: ExitGuestCrashed, Reason: "guest shut off unexpectedly (reason " + why + ")"}
}

// stop ends the domain on a stop request: ACPI shutdown, up to grace for the
// guest to power off, then destroy.
func (w *watcher) stop(grace time.Duration, daemonDone <-chan struct{}) Result {
	ctx, cancel := context.WithTimeout(context.Background(), grace+15*time.Second)
	defer cancel()
	if r, ended := w.check(ctx); ended {
		return r
	}
	if !w.started {
		return Result{Code: ExitOK, Reason: "stopped before a guest started"}
	}
	begin := time.Now()
	if err := w.m.Shutdown(ctx, w.name); err != nil && !errors.Is(err, domain.ErrInvalidState) {
		w.log.Info("ACPI shutdown request failed", "domain", w.name, "error", err.Error())
	}
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	tick := time.NewTicker(w.poll)
	defer tick.Stop()
	for {
		if r, ended := w.check(ctx); ended {
			if r.Code == ExitOK {
				r.Reason = fmt.Sprintf("guest shut down on request after %.1f s", time.Since(begin).Seconds())
			}
			return r
		}
		select {
		case <-daemonDone:
			return Result{Code: ExitLibvirtdDied, Reason: "libvirtd exited while the guest was shutting down"}
		case <-deadline.C:
			if err := w.m.Destroy(ctx, w.name); err != nil && !errors.Is(err, domain.ErrInvalidState) {
				return Result{Code: ExitGuestCrashed, Reason: fmt.Sprintf("destroy after the grace period of %s failed: %v", grace, err)}
			}
			return Result{Code: ExitOK, Reason: fmt.Sprintf("guest destroyed: it did not power off within the grace period of %s", grace)}
		case <-tick.C:
		}
	}
}
