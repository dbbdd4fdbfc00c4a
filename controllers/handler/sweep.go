package handler

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/virtkit/virtkit/virt/confined"
	"github.com/virtkit/virtkit/virt/launcher"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// sweep removes the launcher folders (HostRunDir/<uid>) that nothing needs
// any more and whose launchers have ended: the pod's hostPath outlives the
// pod, and nobody else removes it. A folder is kept while its key is the
// UID of a VMI that exists (on any node: local nodes of one machine share
// HostRunDir), of the migration a VMI's status.migrationState names (unless
// it failed), or of
// a migration that has not failed and whose VMI exists (a target folder,
// which after a successful migration holds the guest's launcher), and
// while its launcher's libvirt still answers; pending says there was such a
// launcher, ending, whose folder a later sweep removes. Of the others, it
// removes those it claimed at once, and those nobody claimed only once
// they have not changed for unclaimedGrace (see claims).
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
	var migs virtv1.VirtualMachineInstanceMigrationList
	if err := r.reader.List(ctx, &migs); err != nil {
		return false, fmt.Errorf("handler: sweeping %s: listing VirtualMachineInstanceMigrations: %w", r.cfg.HostRunDir, err)
	}
	live := map[types.UID]bool{}
	vmis := map[types.NamespacedName]bool{}
	for _, v := range list.Items {
		live[v.UID] = true
		vmis[types.NamespacedName{Namespace: v.Namespace, Name: v.Name}] = true
		if ms := v.Status.MigrationState; ms != nil && ms.MigrationUID != "" && !ms.Failed {
			live[ms.MigrationUID] = true
		}
	}
	for _, m := range migs.Items {
		if m.Status.Phase != virtv1.MigrationFailed && vmis[types.NamespacedName{Namespace: m.Namespace, Name: m.Spec.VMIName}] {
			live[m.UID] = true
		}
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
		claimed := r.claims.claimed(uid)
		if !claimed && !r.unclaimedAndOld(e) {
			continue
		}
		if err := removeFolder(r.cfg.HostRunDir, e.Name()); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := r.claims.release(uid); err != nil {
			errs = append(errs, err)
		}
		logf.FromContext(ctx).V(1).Info("removed the launcher folder of a VMI that is gone", "uid", uid, "claimed", claimed)
	}
	return pending, errors.Join(append(errs, r.releaseDone(live))...)
}

// unclaimedGrace is how long a launcher folder nobody here claimed stays
// unchanged before a sweep removes it: longer than any launcher takes to
// start (image pulls included) or a handler elsewhere to read how it ended.
const unclaimedGrace = 15 * time.Minute

// unclaimedAndOld reports whether the folder e has not changed for
// unclaimedGrace.
func (r *Reconciler) unclaimedAndOld(e fs.DirEntry) bool {
	info, err := e.Info()
	return err == nil && r.clock.Since(info.ModTime()) > unclaimedGrace
}

// releaseDone forgets the claims of folders that are gone and not needed.
func (r *Reconciler) releaseDone(live map[types.UID]bool) error {
	claimed, err := r.claims.list()
	if err != nil {
		return err
	}
	var errs []error
	for _, uid := range claimed {
		if live[uid] {
			continue
		}
		if _, err := os.Lstat(filepath.Join(r.cfg.HostRunDir, string(uid))); errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, r.claims.release(uid))
		}
	}
	return errors.Join(errs...)
}

// sweepRetry is how soon a sweep that found an ending launcher runs again.
const sweepRetry = 2 * time.Second

// launcherAnswers reports whether a process listens on the VMI's launcher
// libvirt socket.
func (r *Reconciler) launcherAnswers(ctx context.Context, uid types.UID) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	f, err := launcher.OpenFolder(r.hostLayout(uid))
	if err != nil {
		return false
	}
	defer f.Close()
	c, err := f.DialLibvirt(ctx)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// removeFolder removes the launcher folder name of HostRunDir run and all
// a pod left in it, never following a link the pod made.
func removeFolder(run, name string) error {
	root, err := confined.Open(run, confined.NoSymlinks)
	if err != nil {
		return err
	}
	defer root.Close()
	return root.RemoveAll(name)
}
