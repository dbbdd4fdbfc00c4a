package pool

import (
	"math/rand/v2"

	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit/controllers/events"
	virtv1 "kubevirt.io/api/core/v1"
)

// EventRecorder is the one recorder type of every controller
// (controllers/events).
type EventRecorder = events.Recorder

// Option changes how a Reconciler works.
type Option func(*Reconciler)

// WithClock sets the clock of condition timestamps; the default is the real
// clock.
func WithClock(c clock.PassiveClock) Option { return func(r *Reconciler) { r.clock = c } }

// WithEventRecorder sets where events about pools go. SetupWithManager uses
// the manager's recorder unless one is set; the default otherwise drops
// events.
func WithEventRecorder(rec EventRecorder) Option { return func(r *Reconciler) { r.recorder = rec } }

// WithShuffle sets how the Random sort policy orders VMs; the default is
// math/rand/v2. Tests pass one that keeps the order.
func WithShuffle(s Shuffle) Option { return func(r *Reconciler) { r.shuffle = s } }

// WithBurst sets how many VMs one reconcile creates or deletes at most
// (default DefaultBurst, as KubeVirt).
func WithBurst(n int) Option { return func(r *Reconciler) { r.burst = n } }

// DefaultWorkers is how many pools the controller works on at once by
// default, as KubeVirt's --pool-controller-threads.
const DefaultWorkers = 3

// WithWorkers sets how many pools the controller works on at once (default
// DefaultWorkers); never two reconciles of one pool.
func WithWorkers(n int) Option { return func(r *Reconciler) { r.workers = n } }

func defaults() Reconciler {
	return Reconciler{
		clock:    clock.RealClock{},
		recorder: events.Discard(),
		shuffle: func(vms []*virtv1.VirtualMachine) {
			rand.Shuffle(len(vms), func(i, j int) { vms[i], vms[j] = vms[j], vms[i] })
		},
		burst:   DefaultBurst,
		workers: DefaultWorkers,
	}
}
