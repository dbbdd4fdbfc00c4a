package replicaset

import (
	"context"

	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit/controllers/events"
	"github.com/virtkit/virtkit/virt/spec"
)

// EventRecorder is the one recorder type of every controller
// (controllers/events).
type EventRecorder = events.Recorder

// Option changes how a Reconciler works.
type Option func(*Reconciler)

// WithClock sets the clock of condition timestamps; the default is the real
// clock.
func WithClock(c clock.PassiveClock) Option { return func(r *Reconciler) { r.clock = c } }

// WithEventRecorder sets where events about replica sets go. SetupWithManager
// uses the manager's recorder unless one is set; the default otherwise drops
// events.
func WithEventRecorder(rec EventRecorder) Option { return func(r *Reconciler) { r.recorder = rec } }

// SpecOptionsSource returns the virt/spec options in force when a VMI is
// created: the cluster's settings as they are then.
type SpecOptionsSource func(ctx context.Context) ([]spec.Option, error)

// WithSpecOptions sets the virt/spec options (architecture, machine type,
// grace period...) each new VMI is defaulted and validated with.
func WithSpecOptions(opts ...spec.Option) Option {
	return WithSpecOptionsFrom(func(context.Context) ([]spec.Option, error) { return opts, nil })
}

// WithSpecOptionsFrom makes each new VMI take its spec options from src, so
// that a changed KubeVirt CR applies to the VMIs created after the change.
// An error of src fails that reconcile, which is retried.
func WithSpecOptionsFrom(src SpecOptionsSource) Option {
	return func(r *Reconciler) { r.specSource = src }
}

// WithBurst sets how many VMIs one reconcile creates or deletes at most
// (default DefaultBurst, as KubeVirt).
func WithBurst(n int) Option { return func(r *Reconciler) { r.burst = n } }

// DefaultWorkers is how many replica sets the controller works on at once
// by default: KubeVirt's --rs-controller-threads.
const DefaultWorkers = 3

// WithWorkers sets how many replica sets the controller works on at once
// (default DefaultWorkers); never two reconciles of one replica set.
func WithWorkers(n int) Option { return func(r *Reconciler) { r.workers = n } }

func defaults() Reconciler {
	return Reconciler{
		clock:      clock.RealClock{},
		recorder:   events.Discard(),
		specSource: func(context.Context) ([]spec.Option, error) { return nil, nil },
		burst:      DefaultBurst,
		workers:    DefaultWorkers,
	}
}
