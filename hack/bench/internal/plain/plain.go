// Package plain runs the benchmarks' floor: a private libvirtd with no
// Kubernetes around it, started as a launcher starts its own, sharing the
// checkout's QEMU capability cache, with a domain Manager connected to it.
package plain

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	domainlibvirt "github.com/virtkit/virtkit/virt/domain/libvirt"
	"github.com/virtkit/virtkit/virt/libvirtd"
)

// Daemon is a running private libvirtd and a Manager connected to it.
type Daemon struct {
	*domainlibvirt.Manager
	d *libvirtd.Daemon
}

// Start starts a libvirtd whose instance folder is dir, with the capability
// cache of the checkout repo (_output/cache/libvirt), and connects to it.
// On failure nothing of it is left running.
func Start(ctx context.Context, repo, dir string) (*Daemon, error) {
	d, err := libvirtd.Start(ctx, libvirtd.Config{Dir: dir, CacheDir: filepath.Join(repo, "_output", "cache", "libvirt")})
	if err != nil {
		return nil, err
	}
	m, err := domainlibvirt.New(ctx, d.URI())
	if err != nil {
		return nil, errors.Join(err, stop(d))
	}
	return &Daemon{Manager: m, d: d}, nil
}

// Socket is the daemon's libvirt socket.
func (p *Daemon) Socket() string { return p.d.Config().Paths().Socket }

// Close disconnects and stops the daemon, waiting up to a minute.
func (p *Daemon) Close() error {
	return errors.Join(p.Manager.Close(), stop(p.d))
}

func stop(d *libvirtd.Daemon) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return d.Stop(ctx)
}
