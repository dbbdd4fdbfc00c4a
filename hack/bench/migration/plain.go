package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/hack/bench/internal/benchkit"
	"github.com/virtkit/virtkit/hack/bench/internal/plain"
	"github.com/virtkit/virtkit/internal/freeport"
	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/migrate"
)

// runPlain migrates the test guest of memMiB between two private libvirtd
// o.runs times, a freshly booted guest each time, and returns each
// migration's time and downtime. The daemons and guests are gone when it
// returns.
func runPlain(ctx context.Context, o options, memMiB, dataMiB uint) (_ []sample, err error) {
	guest, err := testguest.Build(ctx, o.repo)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("/tmp", "vkm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var daemons [2]*plain.Daemon
	for i := range daemons {
		if daemons[i], err = plain.Start(ctx, o.repo, filepath.Join(dir, "d"+strconv.Itoa(i))); err != nil {
			return nil, err
		}
		defer func() { err = errors.Join(err, daemons[i].Close()) }()
	}
	src, dst := daemons[0], daemons[1]
	var out []sample
	for run := 0; run < o.runs; run++ {
		name := fmt.Sprintf("plain-%d-%d-%d", memMiB, dataMiB, run)
		s, err := plainOnce(ctx, guest, dir, name, memMiB, dataMiB, src, dst)
		// Gone whatever happened, from both sides.
		for _, m := range daemons {
			_ = m.Destroy(ctx, name)
			if uerr := m.Undefine(ctx, name); uerr != nil && !errors.Is(uerr, domain.ErrNotFound) && err == nil {
				err = uerr
			}
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// plainOnce boots the guest on src, waits until it is ready and migrates
// it to dst. With dataMiB, the guest has a raw data disk of that size full
// of data (as a claim's disk.img), copied to an empty file of its size on
// the destination, as the copy of a claim is.
func plainOnce(ctx context.Context, guest testguest.Artifacts, dir, name string, memMiB, dataMiB uint, src, dst *plain.Daemon) (sample, error) {
	disks, logs, data := [2]string{}, [2]string{}, [2]string{}
	for i, side := range []string{"src", "dst"} {
		disks[i] = filepath.Join(dir, name+"."+side+".qcow2")
		logs[i] = filepath.Join(dir, name+"."+side+".log")
		if err := plain.Overlay(ctx, guest, disks[i]); err != nil {
			return sample{}, err
		}
		if dataMiB > 0 {
			data[i] = filepath.Join(dir, name+"."+side+".data.img")
			defer os.Remove(data[i])
		}
	}
	doc := benchkit.DiskBooted(name, guest, memMiB, disks[0], logs[0])
	if dataMiB > 0 {
		if err := fillImage(data[0], dataMiB); err != nil {
			return sample{}, err
		}
		if err := emptyImage(data[1], dataMiB); err != nil {
			return sample{}, err
		}
		doc.Devices.Disks = append(doc.Devices.Disks, libvirtxml.DomainDisk{
			Device: "disk",
			Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "raw"},
			Source: &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: data[0]}},
			Target: &libvirtxml.DomainDiskTarget{Dev: "vdb", Bus: "virtio"},
		})
	}
	if err := src.Define(ctx, doc); err != nil {
		return sample{}, err
	}
	if err := src.Start(ctx, name, domain.StartOptions{}); err != nil {
		return sample{}, err
	}
	readyCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	_, err := testguest.WaitLine(readyCtx, logs[0], regexp.MustCompile(`^`+testguest.ReadyMarker))
	cancel()
	if err != nil {
		return sample{}, err
	}
	port, err := freeport.Range(1)
	if err != nil {
		return sample{}, err
	}
	dest := migrate.Destination{
		URI:           "qemu+unix:///system?socket=" + dst.Socket(),
		MigrationURI:  "tcp://127.0.0.1:" + strconv.Itoa(port),
		ListenAddress: "127.0.0.1",
		Host:          dst,
		EditXML: func(doc *libvirtxml.Domain) error {
			// The destination's own overlay and console log.
			doc.Devices.Disks[0].Source.File.File = disks[1]
			if dataMiB > 0 {
				doc.Devices.Disks[1].Source.File.File = data[1]
			}
			doc.Devices.Serials[0].Source.File.Path = logs[1]
			return nil
		},
	}
	// The clock stops when the guest runs on the destination and no
	// migration job is left there: what the target's handler waits for
	// before it takes a VMI over. (Run itself returns a little later,
	// after libvirt's confirm phase on the source.)
	arrived := make(chan time.Time, 1)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		for watchCtx.Err() == nil {
			st, reason, err := dst.State(watchCtx, name)
			if err == nil && st == domain.StateRunning && reason != domain.ReasonRunningPostcopy {
				if js, err := dst.JobStats(watchCtx, name, domain.JobStatsOptions{}); err == nil && !js.Type.Active() {
					arrived <- time.Now()
					return
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	begin := time.Now()
	res, err := migrate.Run(ctx, src, name, dest, migrate.DefaultConfig(), migrate.WithCopyStorage(domain.CopyIncremental))
	if err != nil {
		return sample{}, err
	}
	if res.Downtime == 0 {
		return sample{}, fmt.Errorf("migration of %s: libvirt reported no downtime", name)
	}
	var at time.Time
	select {
	case at = <-arrived:
	case <-time.After(10 * time.Second):
		return sample{}, fmt.Errorf("migration of %s: the destination never showed the guest running without a job", name)
	}
	fmt.Printf("  %s: %s until it ran on the destination (Run: %s, downtime %s)\n", name, at.Sub(begin).Round(time.Millisecond),
		res.Duration.Round(time.Millisecond), res.Downtime)
	return sample{total: at.Sub(begin), downtime: res.Downtime}, nil
}

// fillImage writes a raw image of mib MiB of pseudo-random bytes (data no
// copy can skip or compress), readable and writable by all: the private
// libvirtd's QEMU runs as another user.
func fillImage(path string, mib uint) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if err != nil {
		return err
	}
	rng := rand.NewChaCha8([32]byte{'v', 'i', 'r', 't', 'k', 'i', 't'})
	buf := make([]byte, 1<<20)
	for i := uint(0); i < mib; i++ {
		_, _ = rng.Read(buf)
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Chmod(path, 0o666)
}

// emptyImage makes a sparse raw image of mib MiB.
func emptyImage(path string, mib uint) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if err != nil {
		return err
	}
	err = f.Truncate(int64(mib) << 20)
	return errors.Join(err, f.Close(), os.Chmod(path, 0o666))
}
