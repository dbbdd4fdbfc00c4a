package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/libvirtd"
)

// Config is what one launcher runs.
type Config struct {
	// Layout is the per-VMI folder shared with the handler.
	Layout Layout
	// Domain is the libvirt name of the VMI's domain (see DomainName).
	Domain string
	// GracePeriod bounds a graceful shutdown on a stop request before the
	// domain is destroyed (the VMI's terminationGracePeriodSeconds).
	GracePeriod time.Duration
	// Libvirtd tunes the private daemon (Binary, CacheDir, HostUUID,
	// LogLevel); its Dir is always Layout.LibvirtDir().
	Libvirtd libvirtd.Config
}

// Connector opens a domain Manager on a libvirt URI. The launcher binary
// passes virt/domain/libvirt's constructor; tests may pass anything that
// reaches the same daemon.
type Connector func(ctx context.Context, uri string) (domain.Manager, error)

// Validate reports the first field that makes c unusable.
func (c Config) Validate() error {
	switch {
	case c.Layout.Root == "":
		return errors.New("launcher: Config.Layout.Root: required")
	case c.Domain == "":
		return errors.New("launcher: Config.Domain: required")
	case c.GracePeriod < 0:
		return fmt.Errorf("launcher: Config.GracePeriod %s: must not be negative", c.GracePeriod)
	}
	return nil
}

// Run is one launcher's life: it starts the private libvirtd, becomes ready,
// follows the domain the handler starts, and returns when the guest has
// ended, or when ctx ends (a stop request: graceful shutdown within the
// grace period, then destroy). Before returning it stops libvirtd and every
// process of its namespace and writes the Result to Layout.ExitFile().
func Run(ctx context.Context, cfg Config, connect Connector, opts ...Option) Result {
	o := options{log: logr.Discard(), poll: 250 * time.Millisecond, daemon: StartLibvirtd}
	for _, opt := range opts {
		opt(&o)
	}
	res := run(ctx, cfg, connect, o)
	if cfg.Layout.Root != "" {
		if b, err := json.Marshal(res); err == nil {
			_ = publish(cfg.Layout.ExitFile(), append(b, '\n'))
		}
	}
	o.log.Info("launcher ended", "code", res.Code, "reason", res.Reason)
	return res
}

func run(ctx context.Context, cfg Config, connect Connector, o options) (res Result) {
	if err := cfg.Validate(); err != nil {
		return Result{Code: ExitSetupFailed, Reason: err.Error()}
	}
	if err := os.MkdirAll(cfg.Layout.Root, 0o750); err != nil {
		return Result{Code: ExitSetupFailed, Reason: fmt.Sprintf("launcher: %v", err)}
	}
	if err := shareRoot(cfg); err != nil {
		return Result{Code: ExitSetupFailed, Reason: err.Error()}
	}
	_ = os.Remove(cfg.Layout.ExitFile())

	lc := cfg.Libvirtd
	lc.Dir = cfg.Layout.LibvirtDir()
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	d, err := o.daemon(startCtx, lc, o.log)
	cancel()
	if err != nil {
		return Result{Code: ExitSetupFailed, Reason: err.Error()}
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := d.Stop(stopCtx); err != nil {
			res.Reason += "; " + err.Error()
			if res.Code == ExitOK {
				res.Code = ExitLibvirtdDied
			}
		}
	}()

	m, err := connect(ctx, d.URI())
	if err != nil {
		return Result{Code: ExitSetupFailed, Reason: fmt.Sprintf("launcher: connect %s: %v", d.URI(), err)}
	}
	defer m.Close()

	if err := publish(cfg.Layout.ReadyFile(), []byte(d.URI()+"\n")); err != nil {
		return Result{Code: ExitSetupFailed, Reason: fmt.Sprintf("launcher: %v", err)}
	}
	defer os.Remove(cfg.Layout.ReadyFile())
	o.log.Info("launcher ready", "domain", cfg.Domain, "uri", d.URI())

	// The subscription outlives ctx: stop follows the domain after a stop request.
	eventsCtx, endEvents := context.WithCancel(context.WithoutCancel(ctx))
	defer endEvents()
	w := newWatcher(eventsCtx, m, cfg.Domain, o.poll, o.log)
	if r, ended := w.follow(ctx, d.Done()); ended {
		return r
	}
	return w.stop(cfg.GracePeriod, d.Done())
}

// shareRoot lets QEMU, when it runs as a user of its own
// (Libvirtd.QEMUAs), create its sockets and console log in the folder:
// the folder goes to QEMU's group, mode 0770 with the sticky bit, so that
// QEMU may remove or rename only what it made (not libvirt's folder, whose
// socket the handler dials, nor the ready and exit files).
func shareRoot(cfg Config) error {
	o := cfg.Libvirtd.QEMUAs
	if o == nil {
		return nil
	}
	if err := os.Lchown(cfg.Layout.Root, -1, o.GID); err != nil {
		return fmt.Errorf("launcher: giving the folder to QEMU's group: %w", err)
	}
	if err := os.Chmod(cfg.Layout.Root, os.ModeSticky|0o770); err != nil {
		return fmt.Errorf("launcher: %w", err)
	}
	return nil
}
