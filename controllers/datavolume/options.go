package datavolume

import (
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/events"
)

// EventRecorder is the one recorder type of every controller
// (controllers/events).
type EventRecorder = events.Recorder

// Option changes how a Reconciler works.
type Option func(*Reconciler)

// WithPodOptions sets the importer pods' image, pull policy and the file
// system overhead of the disks they write. The image is required.
func WithPodOptions(o PodOptions) Option { return func(r *Reconciler) { r.pod = o } }

// WithClient sets the client the reconciler reads (from a cache) and writes
// through, and reads uncached objects with. SetupWithManager uses the
// manager's unless set.
func WithClient(c client.Client) Option {
	return func(r *Reconciler) { r.client, r.apiReader = c, c }
}

// WithClock sets the clock of condition timestamps; the default is the real
// clock.
func WithClock(c clock.PassiveClock) Option { return func(r *Reconciler) { r.clock = c } }

// WithEventRecorder sets where events about DataVolumes go.
// SetupWithManager uses the manager's recorder unless one is set; the
// default otherwise drops events.
func WithEventRecorder(rec EventRecorder) Option { return func(r *Reconciler) { r.recorder = rec } }

// WithProgress sets how an importer's progress is read; the default asks
// the pod (HTTPProgress).
func WithProgress(p ProgressReader) Option { return func(r *Reconciler) { r.progress = p } }

// DefaultWorkers is how many DataVolumes the controller works on at once
// by default.
const DefaultWorkers = 3

// WithNamespace names the namespace virtkit runs in, which holds the
// ConfigMap of the import proxy's CAs that the CDIConfig's
// importProxy.trustedCAProxy names (as CDI's own namespace does).
func WithNamespace(ns string) Option { return func(r *Reconciler) { r.namespace = ns } }

// WithWorkers sets how many DataVolumes the controller works on at once.
func WithWorkers(n int) Option { return func(r *Reconciler) { r.workers = n } }

func defaults() Reconciler {
	return Reconciler{clock: clock.RealClock{}, recorder: events.Discard(), progress: HTTPProgress{}, workers: DefaultWorkers}
}
