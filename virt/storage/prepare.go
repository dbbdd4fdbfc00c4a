package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	virtv1 "kubevirt.io/api/core/v1"
)

// Prepare implements Interface. Every image is first written to a temporary
// file next to its final path; only when all are written are they moved into
// place. An image that must not exist yet (a claim's disk.img, an emptyDisk,
// a hostDisk) is linked, so one that appeared meanwhile is never
// overwritten; overlays and ISOs replace stale ones. On any error the
// temporary files, the folders Prepare made and the images already moved are
// removed, and replaced images are put back.
func (m *Manager) Prepare(ctx context.Context, vmi *virtv1.VirtualMachineInstance, pod Pod, plan Plan) (err error) {
	t := &txn{fs: m.o.fsys, owner: m.o.owner}
	defer func() {
		if err != nil {
			t.rollback()
		}
	}()
	names := make([]string, 0, len(plan))
	for n, p := range plan {
		// A hotpluggable claim's image in the hotplug folder is made in
		// the claim, where its attachment pod mounts it, and bound in
		// later: a blank one here would be attached in its place.
		if p.Create && !(p.Hotpluggable && filepath.Dir(p.Path) == m.o.layout.HotplugDir) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := plan[n]
		if err := m.prepare(ctx, t, vmi, pod, p); err != nil {
			var ve *VolumeError
			if errors.As(err, &ve) {
				return err
			}
			return &VolumeError{Volume: n, Path: p.Path, Detail: "preparing " + string(p.Kind), Err: err}
		}
	}
	if err := t.commit(); err != nil {
		return err
	}
	if err := m.adopt(plan); err != nil {
		return err
	}
	for _, f := range t.files {
		m.o.log.V(1).Info("created", "path", f.final)
	}
	for _, name := range t.swept {
		m.o.log.Info("removed the leftover of an interrupted preparation", "path", name)
	}
	return nil
}

// adopt gives the images QEMU writes and Prepare did not make (a claim's
// or hostDisk's existing disk.img, a block device) to the WithOwner user,
// as KubeVirt's handler does for a launcher that is not root: that QEMU
// could not open them otherwise. Read-only images keep their owner (a
// read-only block device is the pod's own node, given too, or QEMU could
// not read it), and so do hotpluggable ones, attached later. A link in
// their place is refused, never followed.
func (m *Manager) adopt(plan Plan) error {
	o := m.o.owner
	if o == nil {
		return nil
	}
	names := make([]string, 0, len(plan))
	for n := range plan {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		p := plan[n]
		if p.Create || p.ReadOnly && p.Source != SourceBlock || p.Hotpluggable || p.Path == "" {
			continue
		}
		switch p.Kind {
		case KindPersistentVolumeClaim, KindDataVolume, KindHostDisk:
		default:
			continue
		}
		if err := m.o.fsys.Chown(p.Path, o.uid, o.gid); err != nil {
			return &VolumeError{Volume: n, Path: p.Path, Detail: fmt.Sprintf("giving the image to user %d (QEMU's)", o.uid), Err: err}
		}
		m.o.log.V(1).Info("gave to QEMU's user", "path", p.Path, "uid", o.uid)
	}
	return nil
}

func (m *Manager) prepare(ctx context.Context, t *txn, vmi *virtv1.VirtualMachineInstance, pod Pod, p DiskPlan) error {
	switch p.Kind {
	case KindPersistentVolumeClaim, KindDataVolume, KindHostDisk:
		f, err := t.stage(p.Path, false, 0o660)
		if err != nil {
			return err
		}
		return f.Truncate(p.CapacityBytes) // sparse
	case KindEmptyDisk:
		return t.qcow2(p.Path, false, QCOW2Options{Size: p.CapacityBytes})
	case KindEphemeral, KindContainerDisk:
		return t.qcow2(p.Path, true, QCOW2Options{Size: p.CapacityBytes, BackingFile: p.BackingPath, BackingFormat: p.BackingFormat})
	case KindCloudInitNoCloud, KindCloudInitConfigDrive:
		vol := volumeNamed(vmi, p.Volume)
		if vol == nil {
			return fmt.Errorf("no volume %q in the VMI", p.Volume)
		}
		files, err := CloudInitFiles(vmi, vol, pod.Secrets)
		if err != nil {
			return &VolumeError{Volume: p.Volume, Detail: err.Error(), Err: ErrInvalid}
		}
		return t.iso(p.Path, p.Label, files)
	case KindConfigMap, KindSecret, KindServiceAccount, KindDownwardAPI:
		files := map[string][]byte{}
		if p.ContentDir != "" {
			var err error
			if files, err = ReadFolder(ctx, m.o.inspector, m.o.fsys, p.ContentDir); err != nil {
				return err
			}
		}
		return t.iso(p.Path, p.Label, files)
	}
	return fmt.Errorf("the plan asks to create an image of unknown kind %q", p.Kind)
}

func volumeNamed(vmi *virtv1.VirtualMachineInstance, name string) *virtv1.Volume {
	for i := range vmi.Spec.Volumes {
		if vmi.Spec.Volumes[i].Name == name {
			return &vmi.Spec.Volumes[i]
		}
	}
	return nil
}

// Release implements Interface: it removes every Discardable image of the
// plan and the folders that held only it. Absent images are fine.
func (m *Manager) Release(ctx context.Context, plan Plan) error {
	var errs []error
	for _, p := range plan {
		if !p.Discardable() || p.Path == "" {
			continue
		}
		path := p.Path // in fsys
		if err := m.o.fsys.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, &VolumeError{Volume: p.Volume, Path: p.Path, Detail: "removing", Err: err})
			continue
		}
		m.o.log.V(1).Info("removed", "path", path)
		// Overlays and cloud-init ISOs sit in folders of their own.
		if p.Kind == KindEphemeral || p.Kind == KindContainerDisk {
			_ = m.o.fsys.Remove(filepath.Dir(path))
		}
		if p.Kind == KindCloudInitNoCloud || p.Kind == KindCloudInitConfigDrive {
			dir := filepath.Dir(path)
			if m.o.fsys.Remove(dir) == nil {
				_ = m.o.fsys.Remove(filepath.Dir(dir)) // the namespace's folder, when it was the last VMI
			}
		}
	}
	return errors.Join(errs...)
}

// txn stages new images and moves them into place together. Its paths
// are the plan's, in fs (WithFS).
type txn struct {
	fs    FS
	owner *owner   // of the files staged, when set
	dirs  []string // folders made, in creation order
	files []*staged
	swept []string // leftovers of an earlier, killed preparation, removed
}

type staged struct {
	tmp, final string
	replace    bool
	f          *os.File
	committed  bool
	old        string // where a replaced image waits until the commit is done
}

func (t *txn) mkdirAll(dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := t.fs.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		err := t.fs.Mkdir(missing[i], 0o755)
		switch {
		case err == nil:
			t.dirs = append(t.dirs, missing[i])
		case !errors.Is(err, fs.ErrExist): // made meanwhile: not ours to remove
			return err
		}
	}
	return nil
}

// stage opens a temporary file in final's folder.
func (t *txn) stage(final string, replace bool, mode os.FileMode) (*os.File, error) {
	if !replace {
		if _, err := t.fs.Lstat(final); err == nil {
			return nil, fmt.Errorf("%s: %w", final, fs.ErrExist)
		}
	}
	if err := t.mkdirAll(filepath.Dir(final)); err != nil {
		return nil, err
	}
	prefix := tempPrefix(final)
	if err := t.sweep(filepath.Dir(final), prefix); err != nil {
		return nil, err
	}
	f, tmp, err := t.fs.CreateTemp(filepath.Dir(final), prefix+"*")
	if err != nil {
		return nil, err
	}
	t.files = append(t.files, &staged{tmp: tmp, final: final, replace: replace, f: f})
	if err := f.Chmod(mode); err != nil {
		return nil, err
	}
	if o := t.owner; o != nil {
		if err := f.Chown(o.uid, o.gid); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// tempPrefix starts the names of final's temporary files (and of a
// replaced image waiting for the commit): hidden, next to final.
func tempPrefix(final string) string { return "." + filepath.Base(final) + ".vkt-" }

// sweep removes the regular files of dir named with prefix: what a
// preparation killed before its commit or rollback left, possibly a whole
// sparse disk. A preparation of the same image running meanwhile would
// lose its file and fail its commit, to be retried; links and folders of
// that name are not touched.
func (t *txn) sweep(dir, prefix string) error {
	entries, err := t.fs.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		name := filepath.Join(dir, e.Name())
		if err := t.fs.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing the leftover %s: %w", name, err)
		}
		t.swept = append(t.swept, name)
	}
	return nil
}

// imageMode is the mode of the images Prepare makes for one guest (qcow2
// overlays, cloud-init, secret and config ISOs): readable and writable by
// the user QEMU runs as, and by no one else. A secret's data is in the ISO.
const imageMode = 0o600

func (t *txn) qcow2(final string, replace bool, o QCOW2Options) error {
	f, err := t.stage(final, replace, imageMode)
	if err != nil {
		return err
	}
	end, err := WriteQCOW2(f, o)
	if err != nil {
		return err
	}
	return f.Truncate(end)
}

func (t *txn) iso(final, label string, files map[string][]byte) error {
	f, err := t.stage(final, true, imageMode)
	if err != nil {
		return err
	}
	return WriteISO(f, label, files)
}

func (t *txn) commit() error {
	for _, s := range t.files {
		if err := s.f.Sync(); err != nil {
			return err
		}
		if err := s.f.Close(); err != nil {
			return err
		}
		s.f = nil
	}
	for _, s := range t.files {
		if !s.replace {
			// link fails when final exists: never overwrite a disk image.
			if err := t.fs.Link(s.tmp, s.final); err != nil {
				return err
			}
			s.committed = true
			_ = t.fs.Remove(s.tmp)
			continue
		}
		if _, err := t.fs.Lstat(s.final); err == nil {
			s.old = s.tmp + ".old"
			if err := t.fs.Rename(s.final, s.old); err != nil {
				s.old = ""
				return err
			}
		}
		if err := t.fs.Rename(s.tmp, s.final); err != nil {
			return err
		}
		s.committed = true
	}
	for _, s := range t.files {
		if s.old != "" {
			_ = t.fs.Remove(s.old)
			s.old = ""
		}
	}
	return nil
}

func (t *txn) rollback() {
	for i := len(t.files) - 1; i >= 0; i-- {
		s := t.files[i]
		if s.f != nil {
			_ = s.f.Close()
		}
		_ = t.fs.Remove(s.tmp)
		if s.committed {
			_ = t.fs.Remove(s.final)
		}
		if s.old != "" {
			_ = t.fs.Rename(s.old, s.final)
		}
	}
	for i := len(t.dirs) - 1; i >= 0; i-- {
		_ = t.fs.Remove(t.dirs[i])
	}
}
