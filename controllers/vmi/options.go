package vmi

import (
	"context"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/events"
)

// Option changes how a Reconciler works.
type Option func(*Reconciler)

// WithPodOptions sets the options launcher pods are rendered with; the
// launcher image is required.
func WithPodOptions(o PodOptions) Option { return func(r *Reconciler) { r.podOpts = o } }

// PodOptionsSource returns the options a launcher pod is rendered with at
// the moment it is rendered: the cluster's settings as they are then.
type PodOptionsSource func(ctx context.Context) (PodOptions, error)

// WithPodOptionsFrom makes each launcher pod take its options from src
// when it is rendered, instead of those of WithPodOptions, so that a
// changed KubeVirt CR applies to the pods created after the change, as in
// KubeVirt. An error of src fails that reconcile, which is retried.
func WithPodOptionsFrom(src PodOptionsSource) Option {
	return func(r *Reconciler) { r.podSource = src }
}

// WithClock sets the clock used for phase transition and condition
// timestamps. The default is the real clock.
func WithClock(c clock.PassiveClock) Option { return func(r *Reconciler) { r.clock = c } }

// WithSchedulingGrace sets how long a new launcher pod may stay unbound
// before the VMI's status says Scheduling (HoldScheduling); default
// DefaultSchedulingGrace. Zero writes Scheduling as soon as the pod is
// created, a status write of its own.
func WithSchedulingGrace(d time.Duration) Option {
	return func(r *Reconciler) { r.schedulingGrace = d }
}

// WithClient sets the client the reconciler reads (from a cache) and writes
// through, and the uncached reader it confirms a missing pod with before it
// creates one or fails the VMI. SetupWithManager uses the manager's unless
// set; tests wrap them to count writes.
func WithClient(c client.Client, uncached client.Reader) Option {
	return func(r *Reconciler) { r.client, r.reader = c, uncached }
}

// EventRecorder is the part of client-go's record.EventRecorder the controller
// uses; the manager's recorder satisfies it. It is the one recorder type of
// every controller (controllers/events).
type EventRecorder = events.Recorder

// WithEventRecorder sets where events about VMIs go (SuccessfulCreate,
// FailedCreate, SuccessfulDelete, FailedDelete, as KubeVirt names them).
// SetupWithManager uses the manager's recorder unless one is set; the default
// otherwise drops events.
func WithEventRecorder(rec EventRecorder) Option { return func(r *Reconciler) { r.recorder = rec } }

// DefaultWorkers is how many VMIs the controller works on at once by
// default: KubeVirt's --vmi-controller-threads. Each reconcile waits on the
// apiserver a few times; one at a time, a burst of creations queues up.
const DefaultWorkers = 10

// WithWorkers sets how many VMIs the controller works on at once (default
// DefaultWorkers); never two reconciles of one VMI.
func WithWorkers(n int) Option { return func(r *Reconciler) { r.workers = n } }
