package plain

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/virtkit/virtkit/hack/bench/internal/benchkit"
	"github.com/virtkit/virtkit/internal/testguest"
)

// Overlay creates path, a qcow2 overlay of the test guest's disk: what
// each floor guest boots from, as a containerDisk VMI boots from its own
// overlay of the image.
func Overlay(ctx context.Context, guest testguest.Artifacts, path string) error {
	if b, err := exec.CommandContext(ctx, "qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", guest.Disk, path).CombinedOutput(); err != nil {
		return fmt.Errorf("qemu-img create %s: %w: %s", path, err, b)
	}
	return nil
}

// Sequential is the floor of one guest at a time: the test guest (memMiB,
// 1 vCPU, software emulation) booted from its own overlay in one private
// libvirtd, each guest destroyed and undefined before the next is
// defined; a warm-up start first, then runs measured ones. It returns
// each measured define -> running time in seconds; the guests and the
// daemon are gone when it returns.
func Sequential(ctx context.Context, repo string, memMiB uint, runs int) (_ []float64, err error) {
	guest, err := testguest.Build(ctx, repo)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("/tmp", "vkb-plain-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	m, err := Start(ctx, repo, dir)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, m.Close()) }()
	var out []float64
	for i := 0; i <= runs; i++ {
		overlay := filepath.Join(dir, fmt.Sprintf("g%d.qcow2", i))
		if err := Overlay(ctx, guest, overlay); err != nil {
			return nil, err
		}
		doc := benchkit.DiskBooted(fmt.Sprintf("plain-%d", i), guest, memMiB, overlay, filepath.Join(dir, fmt.Sprintf("g%d.log", i)))
		s, err := benchkit.StartRunning(ctx, m, doc)
		if err = errors.Join(err, m.Destroy(ctx, doc.Name), m.Undefine(ctx, doc.Name)); err != nil {
			return nil, err
		}
		if i == 0 {
			fmt.Printf("warm-up on plain libvirt: %.2f s (not counted)\n", s)
			continue
		}
		out = append(out, s)
	}
	return out, nil
}
