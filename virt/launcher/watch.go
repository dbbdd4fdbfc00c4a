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
// state and events, and ending it on a stop request.
type domainWatch interface {
	State(ctx context.Context, name string) (domain.State, domain.Reason, error)
	Events(ctx context.Context) (<-chan domain.Event, error)
	Shutdown(ctx context.Context, name string) error
	Destroy(ctx context.Context, name string) error
}

var _ domainWatch = domain.Manager(nil)

// goneWait bounds how long a watcher that finds its started domain gone waits
// for the stop event that says how it ended.
const goneWait = 5 * time.Second

// watcher follows one domain through a Manager: its lifecycle events, and its
// state read every poll (events are not seen while the connection is lost).
//
// Events decide how the domain ended. The handler undefines a domain as
// soon as it has seen it end, so by the next poll the domain may be gone,
// and a missing domain says nothing of how it stopped; its stop event,
// delivered before the undefinition, does.
type watcher struct {
	m    domainWatch
	name string
	poll time.Duration
	log  logr.Logger
	// events carries the Manager's events; nil when the subscription failed
	// or ended, and the watcher then relies on polling alone.
	events <-chan domain.Event
	// started is set once the domain was seen running, paused or shutting down.
	started bool
}

// newWatcher subscribes to m's events until ctx ends and returns a watcher
// of domain name. A failed subscription is logged: the watcher then polls.
func newWatcher(ctx context.Context, m domainWatch, name string, poll time.Duration, log logr.Logger) *watcher {
	w := &watcher{m: m, name: name, poll: poll, log: log}
	events, err := m.Events(ctx)
	if err != nil {
		log.Info("subscribing to domain events failed; following the domain by polling alone", "domain", name, "error", err.Error())
	}
	w.events = events
	return w
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
		case e, ok := <-w.events:
			if r, ended := w.observe(e, ok); ended {
				return r, true
			}
		case <-tick.C:
		}
	}
}

// observe takes one event from the subscription (ok false: it ended). A
// stop event of the domain ends the watch with how the domain ended.
func (w *watcher) observe(e domain.Event, ok bool) (Result, bool) {
	if !ok {
		w.events = nil
		w.log.V(1).Info("domain event subscription ended; following the domain by polling alone", "domain", w.name)
		return Result{}, false
	}
	if e.Domain != w.name {
		return Result{}, false
	}
	switch e.Type {
	case domain.EventStarted, domain.EventResumed, domain.EventSuspended, domain.EventShutdown, domain.EventPMSuspended:
		w.markStarted()
	case domain.EventStopped:
		reason, _ := e.ShutoffReason()
		return endResult(reason), true
	}
	return Result{}, false
}

func (w *watcher) markStarted() {
	if !w.started {
		w.log.Info("guest started", "domain", w.name)
	}
	w.started = true
}

// gone decides how a started domain that no longer exists ended: by its stop
// event, which libvirt sends before the domain can be undefined, if it
// arrives within goneWait; without one, as an orderly end.
func (w *watcher) gone(ctx context.Context) Result {
	timer := time.NewTimer(goneWait)
	defer timer.Stop()
	for w.events != nil {
		select {
		case e, ok := <-w.events:
			if r, ended := w.observe(e, ok); ended {
				return r
			}
			continue
		case <-timer.C:
		case <-ctx.Done():
		}
		break
	}
	w.log.Info("the domain is gone and no stop event said how it ended", "domain", w.name)
	return Result{Code: ExitOK, Reason: "domain " + w.name + " is gone"}
}

// check reads the domain's state once.
func (w *watcher) check(ctx context.Context) (Result, bool) {
	callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, reason, err := w.m.State(callCtx, w.name)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		// Not defined yet, or it ended and was undefined.
		if w.started {
			return w.gone(ctx), true
		}
		return Result{}, false
	case err != nil:
		w.log.V(1).Info("reading the domain state failed", "domain", w.name, "error", err.Error())
		return Result{}, false
	}
	switch st {
	case domain.StateRunning, domain.StatePaused, domain.StateBlocked, domain.StateShutdown, domain.StatePMSuspended:
		w.markStarted()
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
	case domain.ReasonShutoffCrashed, domain.ReasonShutoffFailed:
		return Result{Code: ExitGuestCrashed, Reason: "QEMU ended unexpectedly (shut off, reason " + why + ")"}
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
	onRequest := func(r Result) Result {
		if r.Code == ExitOK {
			r.Reason = fmt.Sprintf("guest shut down on request after %.1f s", time.Since(begin).Seconds())
		}
		return r
	}
	if err := w.m.Shutdown(ctx, w.name); err != nil && !errors.Is(err, domain.ErrInvalidState) {
		w.log.Info("ACPI shutdown request failed", "domain", w.name, "error", err.Error())
	}
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	tick := time.NewTicker(w.poll)
	defer tick.Stop()
	for {
		if r, ended := w.check(ctx); ended {
			return onRequest(r)
		}
		select {
		case <-daemonDone:
			return Result{Code: ExitLibvirtdDied, Reason: "libvirtd exited while the guest was shutting down"}
		case e, ok := <-w.events:
			if r, ended := w.observe(e, ok); ended {
				return onRequest(r)
			}
		case <-deadline.C:
			if err := w.m.Destroy(ctx, w.name); err != nil && !errors.Is(err, domain.ErrInvalidState) {
				return Result{Code: ExitGuestCrashed, Reason: fmt.Sprintf("destroy after the grace period of %s failed: %v", grace, err)}
			}
			return Result{Code: ExitOK, Reason: fmt.Sprintf("guest destroyed: it did not power off within the grace period of %s", grace)}
		case <-tick.C:
		}
	}
}
