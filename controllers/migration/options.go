package migration

import (
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/events"
	"github.com/virtkit/virtkit/controllers/vmi"
)

// Option changes how a Reconciler works.
type Option func(*Reconciler)

// WithPodOptions sets the options target pods are rendered with, the same
// as the VMI controller's (controllers.Config.PodOptions); the launcher
// image is required.
func WithPodOptions(o vmi.PodOptions) Option { return func(r *Reconciler) { r.podOpts = o } }

// WithPodOptionsFrom makes each target pod take its options from src when
// it is rendered, as vmi.WithPodOptionsFrom does for launcher pods.
func WithPodOptionsFrom(src vmi.PodOptionsSource) Option {
	return func(r *Reconciler) { r.podSource = src }
}

// WithKubeVirtNamespace sets the namespace of the KubeVirt CR whose
// spec.configuration.migrations applies (default clusterconfig.DefaultNamespace).
func WithKubeVirtNamespace(ns string) Option { return func(r *Reconciler) { r.namespace = ns } }

// WithClock sets the clock of phase timestamps and timeouts (default: the
// real one).
func WithClock(c clock.PassiveClock) Option { return func(r *Reconciler) { r.clock = c } }

// WithTimeouts bounds the steps of a migration before it runs (zero
// fields keep their defaults; see Timeouts).
func WithTimeouts(t Timeouts) Option { return func(r *Reconciler) { r.timeouts = t } }

// WithClient sets the client the reconciler reads (from a cache) and writes
// through, and the uncached reader it reads the KubeVirt CR, the
// MigrationPolicies and namespaces with. SetupWithManager uses the
// manager's unless set.
func WithClient(c client.Client, uncached client.Reader) Option {
	return func(r *Reconciler) { r.client, r.reader = c, uncached }
}

// EventRecorder is the part of client-go's record.EventRecorder the
// controller uses; the manager's recorder satisfies it. It is the one
// recorder type of every controller (controllers/events).
type EventRecorder = events.Recorder

// WithEventRecorder sets where events about migrations go. SetupWithManager
// uses the manager's recorder unless one is set; the default otherwise
// drops events.
func WithEventRecorder(rec EventRecorder) Option { return func(r *Reconciler) { r.recorder = rec } }
