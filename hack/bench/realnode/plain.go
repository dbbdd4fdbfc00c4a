package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/virtkit/virtkit/hack/bench/internal/benchkit"
	"github.com/virtkit/virtkit/hack/bench/internal/plain"
	"github.com/virtkit/virtkit/internal/testguest"
)

// plainFloor boots the test guest from a qcow2 overlay in one private
// libvirtd, as a containerDisk VMI boots, one after another: a warm-up,
// then o.runs measured starts. It returns each define -> running time in
// seconds; the guests and the daemon are gone when it returns.
func plainFloor(ctx context.Context, root string, o options) (_ []float64, err error) {
	guest, err := testguest.Build(ctx, root)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("/tmp", "vkn-plain-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	m, err := plain.Start(ctx, root, dir)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, m.Close()) }()
	var out []float64
	for i := 0; i <= o.runs; i++ {
		overlay := filepath.Join(dir, fmt.Sprintf("g%d.qcow2", i))
		if b, err := exec.CommandContext(ctx, "qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", guest.Disk, overlay).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("qemu-img create %s: %w: %s", overlay, err, b)
		}
		doc := benchkit.DiskBooted(fmt.Sprintf("plain-%d", i), guest, o.memMiB, overlay, filepath.Join(dir, fmt.Sprintf("g%d.log", i)))
		s, err := benchkit.StartRunning(ctx, m, doc)
		err = errors.Join(err, m.Destroy(ctx, doc.Name), m.Undefine(ctx, doc.Name))
		if err != nil {
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
