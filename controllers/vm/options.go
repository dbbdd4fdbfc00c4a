package vm

import (
	"context"

	"math/rand/v2"
	"time"

	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit/controllers/events"
	"github.com/virtkit/virtkit/virt/spec"
)

// EventRecorder is the part of client-go's record.EventRecorder the controller
// uses; the manager's recorder satisfies it. It is the one recorder type of
// every controller (controllers/events).
type EventRecorder = events.Recorder

// Option changes how a Reconciler works.
type Option func(*Reconciler)

// WithClock sets the clock used for condition timestamps and the start
// failure backoff. The default is the real clock.
func WithClock(c clock.PassiveClock) Option { return func(r *Reconciler) { r.clock = c } }

// WithEventRecorder sets where events about VMs go. SetupWithManager uses the
// manager's recorder unless one is set; the default otherwise drops events.
func WithEventRecorder(rec EventRecorder) Option { return func(r *Reconciler) { r.recorder = rec } }

// WithSpecOptions sets the virt/spec options (architecture, machine type,
// grace period...) used to default and validate a VMI before it is created.
func WithSpecOptions(opts ...spec.Option) Option {
	return func(r *Reconciler) { r.specOpts = append([]spec.Option(nil), opts...) }
}

// SpecOptionsSource returns the virt/spec options in force when a VMI is
// created: the cluster's settings as they are then.
type SpecOptionsSource func(ctx context.Context) ([]spec.Option, error)

// WithSpecOptionsFrom makes each new VMI take its spec options from src,
// instead of those of WithSpecOptions, so that a changed KubeVirt CR
// applies to the VMIs created after the change, as in KubeVirt. An error of
// src fails that reconcile, which is retried.
func WithSpecOptionsFrom(src SpecOptionsSource) Option {
	return func(r *Reconciler) { r.specSource = src }
}

// WithMaxStartBackoff sets the longest wait before restarting a VM whose VMIs
// keep failing before they ever run. KubeVirt's default is 300 s.
func WithMaxStartBackoff(d time.Duration) Option { return func(r *Reconciler) { r.backoff.Max = d } }

// WithJitter sets the source of the random part of the backoff: it returns a
// number in [0, n). Tests pass a fixed function; the default is math/rand/v2.
func WithJitter(f func(n int) int) Option { return func(r *Reconciler) { r.backoff.Jitter = f } }

// WithRolloutFrom makes the controller read how template changes reach a
// running VMI (the KubeVirt CR's vmRolloutStrategy) from src at each
// change; the default is KubeVirt's, LiveUpdate.
func WithRolloutFrom(src func(ctx context.Context) (Rollout, error)) Option {
	return func(r *Reconciler) { r.rollout = src }
}

func defaults() Reconciler {
	return Reconciler{
		rollout:  func(context.Context) (Rollout, error) { return Rollout{LiveUpdate: true}, nil },
		clock:    clock.RealClock{},
		recorder: events.Discard(),
		backoff:  Backoff{Max: 300 * time.Second, Jitter: rand.IntN},
		workers:  DefaultWorkers,
	}
}

// DefaultWorkers is how many VMs the controller works on at once by
// default: KubeVirt's --vm-controller-threads.
const DefaultWorkers = 3

// WithWorkers sets how many VMs the controller works on at once (default
// DefaultWorkers); never two reconciles of one VM.
func WithWorkers(n int) Option { return func(r *Reconciler) { r.workers = n } }
