package handler

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// sweep removes the launcher folders (HostRunDir/<uid>) of VMIs that no
// longer exist and whose launchers have ended: the pod's hostPath outlives
// the pod, and nobody else removes it. A folder whose VMI still exists (on
// any node: local nodes of one machine share HostRunDir) or whose
// launcher's libvirt still answers is kept; pending says there was such a
// launcher, ending, whose folder a later sweep removes.
func (r *Reconciler) sweep(ctx context.Context) (pending bool, _ error) {
	ents, err := os.ReadDir(r.cfg.HostRunDir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("handler: sweeping %s: %w", r.cfg.HostRunDir, err)
	}
	var list virtv1.VirtualMachineInstanceList
	if err := r.reader.List(ctx, &list); err != nil {
		return false, fmt.Errorf("handler: sweeping %s: listing VMIs: %w", r.cfg.HostRunDir, err)
	}
	live := map[types.UID]bool{}
	for _, v := range list.Items {
		live[v.UID] = true
	}
	var errs []error
	for _, e := range ents {
		uid := types.UID(e.Name())
		if !e.IsDir() || live[uid] {
			continue
		}
		if r.launcherAnswers(ctx, uid) {
			pending = true
			continue
		}
		if err := os.RemoveAll(filepath.Join(r.cfg.HostRunDir, e.Name())); err != nil {
			errs = append(errs, err)
			continue
		}
		logf.FromContext(ctx).V(1).Info("removed the launcher folder of a VMI that is gone", "uid", uid)
	}
	return pending, errors.Join(errs...)
}

// sweepRetry is how soon a sweep that found an ending launcher runs again.
const sweepRetry = 2 * time.Second

// launcherAnswers reports whether a process listens on the VMI's launcher
// libvirt socket.
func (r *Reconciler) launcherAnswers(ctx context.Context, uid types.UID) bool {
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "unix", r.hostLayout(uid).LibvirtSocket())
	if err != nil {
		return false
	}
	c.Close()
	return true
}
