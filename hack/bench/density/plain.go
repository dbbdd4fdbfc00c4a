package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/hack/bench/internal/benchkit"
	"github.com/virtkit/virtkit/hack/bench/internal/plain"
	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/virt/domain"
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
	m, err := plain.Start(ctx, o.repo, dir)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, m.Close()) }()

	docs := make([]*libvirtxml.Domain, o.n)
	for i := range docs {
		overlay := filepath.Join(dir, fmt.Sprintf("g%d.qcow2", i))
		if err := plain.Overlay(ctx, guest, overlay); err != nil {
			return nil, err
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
			lat[i], errs[i] = benchkit.StartRunning(ctx, m, doc)
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
