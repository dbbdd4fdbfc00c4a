package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/hack/bench/internal/benchkit"
	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/virt/domain"
	domainlibvirt "github.com/virtkit/virtkit/virt/domain/libvirt"
	"github.com/virtkit/virtkit/virt/libvirtd"
)

// runPlain starts o.n test guests in one private libvirtd, one every
// o.interval, and returns each one's define -> running time in seconds.
// Every guest and the daemon are gone when it returns.
func runPlain(ctx context.Context, o options) (_ []float64, err error) {
	guest, err := testguest.Build(ctx, o.repo)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("/tmp", "vkd-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	d, err := libvirtd.Start(ctx, libvirtd.Config{Dir: dir, CacheDir: filepath.Join(o.repo, "_output", "cache", "libvirt")})
	if err != nil {
		return nil, err
	}
	defer func() {
		stop, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if serr := d.Stop(stop); serr != nil && err == nil {
			err = serr
		}
	}()
	m, err := domainlibvirt.New(ctx, d.URI())
	if err != nil {
		return nil, err
	}
	defer m.Close()

	docs := make([]*libvirtxml.Domain, o.n)
	for i := range docs {
		overlay := filepath.Join(dir, fmt.Sprintf("g%d.qcow2", i))
		if out, err := exec.CommandContext(ctx, "qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", guest.Disk, overlay).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("qemu-img create %s: %w: %s", overlay, err, out)
		}
		docs[i] = benchkit.DiskBooted(fmt.Sprintf("plain-%d", i), guest, o.memMiB, overlay, filepath.Join(dir, fmt.Sprintf("g%d.log", i)))
	}

	fmt.Printf("plain libvirt: starting %d guests\n", o.n)
	lat := make([]float64, o.n)
	errs := make([]error, o.n)
	var wg sync.WaitGroup
	for i, doc := range docs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat[i], errs[i] = startOne(ctx, m, doc)
		}()
		time.Sleep(o.interval)
	}
	wg.Wait()
	for i, doc := range docs {
		// Gone again whatever happened: destroy, then undefine.
		_ = m.Destroy(ctx, doc.Name)
		if uerr := m.Undefine(ctx, doc.Name); uerr != nil && errs[i] == nil && !errors.Is(uerr, domain.ErrNotFound) {
			errs[i] = uerr
		}
	}
	for _, e := range errs {
		if e != nil {
			return nil, e
		}
	}
	return lat, nil
}

// startOne defines and starts a guest, returning the seconds from the
// define call until libvirt reports it running.
func startOne(ctx context.Context, m domain.Manager, doc *libvirtxml.Domain) (float64, error) {
	begin := time.Now()
	if err := m.Define(ctx, doc); err != nil {
		return 0, err
	}
	if err := m.Start(ctx, doc.Name, domain.StartOptions{}); err != nil {
		return 0, err
	}
	for {
		st, _, err := m.State(ctx, doc.Name)
		if err == nil && st == domain.StateRunning {
			return time.Since(begin).Seconds(), nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("guest %s not running: %w", doc.Name, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}
