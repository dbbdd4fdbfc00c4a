package clone

import (
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/events"
)

// Option changes a Reconciler.
type Option func(*Reconciler)

// WithClient sets the client the reconciler reads and writes through;
// SetupWithManager uses the manager's unless set.
func WithClient(c client.Client) Option { return func(r *Reconciler) { r.client = c } }

// WithClock sets the clock of conditions.
func WithClock(c clock.PassiveClock) Option { return func(r *Reconciler) { r.clock = c } }

// WithRecorder sets where events go; SetupWithManager uses the manager's
// unless set.
func WithRecorder(rec events.Recorder) Option { return func(r *Reconciler) { r.recorder = rec } }
