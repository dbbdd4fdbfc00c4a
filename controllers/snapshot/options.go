package snapshot

import (
	"context"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/events"
)

// Option changes a reconciler of this package.
type Option func(*base)

// base is what both reconcilers share.
type base struct {
	client   client.Client
	clock    clock.PassiveClock
	recorder events.Recorder
	freezer  Freezer
}

// Freezer freezes and thaws a running VMI's file systems through its guest
// agent, as the subresources freeze and unfreeze do (subresources.Client is
// one). Declared here, where it is used.
type Freezer interface {
	Freeze(ctx context.Context, namespace, name string, unfreezeTimeout time.Duration) error
	Unfreeze(ctx context.Context, namespace, name string) error
}

// WithFreezer has online snapshots of VMs whose guest agent is connected
// freeze the guest's file systems while their volumes are cut, as
// KubeVirt's do (indication GuestAgent). Without one such snapshots are
// crash-consistent and say NoGuestAgent.
func WithFreezer(f Freezer) Option { return func(b *base) { b.freezer = f } }

func newBase(opts []Option) base {
	b := base{clock: clock.RealClock{}}
	for _, o := range opts {
		o(&b)
	}
	return b
}

// WithClient sets the client the reconciler reads and writes through;
// SetupWithManager uses the manager's unless set.
func WithClient(c client.Client) Option { return func(b *base) { b.client = c } }

// WithClock sets the clock of conditions, deadlines and restore times.
func WithClock(c clock.PassiveClock) Option { return func(b *base) { b.clock = c } }

// WithRecorder sets where events go; SetupWithManager uses the manager's
// unless set.
func WithRecorder(r events.Recorder) Option { return func(b *base) { b.recorder = r } }
