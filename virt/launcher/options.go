package launcher

import (
	"context"
	"time"

	"github.com/go-logr/logr"

	"github.com/virtkit/virtkit/virt/libvirtd"
)

// Option changes how [Run] behaves.
type Option func(*options)

type options struct {
	log    logr.Logger
	poll   time.Duration
	daemon DaemonStarter
}

// Daemon is the launcher's private libvirtd as Run uses it;
// *libvirtd.Daemon is the real one.
type Daemon interface {
	// URI is what the launcher connects to and publishes in its ready file.
	URI() string
	// Done is closed when the daemon has exited.
	Done() <-chan struct{}
	// Stop ends the daemon and every process it started.
	Stop(ctx context.Context) error
}

var _ Daemon = (*libvirtd.Daemon)(nil)

// DaemonStarter starts the private libvirtd of cfg (whose Dir is the
// Layout's LibvirtDir) and returns once it serves its socket.
type DaemonStarter func(ctx context.Context, cfg libvirtd.Config, log logr.Logger) (Daemon, error)

// StartLibvirtd is the real DaemonStarter: virt/libvirtd's Start.
func StartLibvirtd(ctx context.Context, cfg libvirtd.Config, log logr.Logger) (Daemon, error) {
	d, err := libvirtd.Start(ctx, cfg, libvirtd.WithLogger(log))
	if err != nil {
		return nil, err
	}
	return d, nil
}

// WithDaemonStarter replaces StartLibvirtd, e.g. with a daemon that serves
// only the socket, for a launcher whose Connector reaches a fake domain
// Manager (virt-local's hollow nodes).
func WithDaemonStarter(s DaemonStarter) Option { return func(o *options) { o.daemon = s } }

// WithLogger sets the logger. The default discards.
func WithLogger(l logr.Logger) Option { return func(o *options) { o.log = l } }

// WithPollInterval sets how often the launcher reads the domain's state
// (default 250 ms): the delay between the guest ending and the launcher
// noticing.
func WithPollInterval(d time.Duration) Option { return func(o *options) { o.poll = d } }
