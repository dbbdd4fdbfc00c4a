package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// mountView builds a container's view of the file system inside the
// helper's private mount namespace: the host's, with bind mounts on top.
//
// A target whose folders do not exist on the host must not be created
// there: another pod's mount namespace could hold a mount on such a folder,
// and removing it later would tear that mount down. Instead the nearest
// existing ancestor is shadowed: a tmpfs is laid over it and populated with
// binds of its original entries (folders recursively, with their submounts),
// copies of its symlinks, and binds of its files; missing folders are then
// created on that tmpfs. Shadowing "/" builds the new root in Scratch and
// moves it over "/" (switch_root).
type mountView struct {
	scratch string
	// own holds the folders in which entries may be created without
	// touching the host: shadows, folders created on them, and mounted
	// volumes (whose sources are the pod's or, for hostPath, the user's
	// choice, as with the kubelet).
	own map[string]bool
	// volumes holds the targets of the folders mounted in the view.
	volumes map[string]bool
	// devices is the tmpfs holding the view's device nodes, once made;
	// made counts them.
	devices string
	made    int
}

func newMountView(scratch string) *mountView {
	return &mountView{scratch: scratch, own: map[string]bool{}, volumes: map[string]bool{}}
}

// bind mounts m.Source at m.Target.
func (v *mountView) bind(m Mount) error {
	return v.place(m, func(target string) error {
		if err := unix.Mount(m.Source, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s at %s: %w", m.Source, target, err)
		}
		return nil
	})
}

// attach mounts tree, a detached clone of m.Source made while it was a
// peer of the node's mount (open_tree), at m.Target, and makes it a slave:
// what the node mounts below m.Source later appears here
// (HostToContainer), and nothing mounted here goes back.
func (v *mountView) attach(m Mount, tree int) error {
	return v.place(m, func(target string) error {
		if err := unix.MoveMount(tree, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("attach %s at %s: %w", m.Source, target, err)
		}
		if err := unix.Mount("", target, "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
			return fmt.Errorf("slave %s: %w", target, err)
		}
		return nil
	})
}

// device makes d in the view: a block device node on a tmpfs of this
// mount namespace only (Scratch/devices, mounted on first use), owned by
// uid and gid, bound at d.Target. The host's own node is never bound: an
// owner or mode the pod gives its node stays in the pod. A target right in
// a mounted volume's folder gets its node made there, as a container
// runtime makes it in the volume's folder on the node (KubeVirt's
// attachment pods rely on it).
func (v *mountView) device(d Device, uid, gid int) error {
	if !filepath.IsAbs(d.Target) {
		return fmt.Errorf("device %q: not an absolute path", d.Target)
	}
	target := filepath.Clean(d.Target)
	if _, err := os.Lstat(target); err == nil {
		return fmt.Errorf("device %s: the path exists in the pod's view", target)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("device %s: %w", target, err)
	}
	if dir := filepath.Dir(target); v.volumes[dir] {
		return makeNode(dir, filepath.Base(target), d, uid, gid)
	}
	if v.devices == "" {
		if v.scratch == "" {
			return errors.New("devices: no scratch folder")
		}
		dir := filepath.Join(v.scratch, "devices")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0700"); err != nil {
			return fmt.Errorf("devices: tmpfs: %w", err)
		}
		v.devices = dir
	}
	v.made++
	node := filepath.Join(v.devices, strconv.Itoa(v.made))
	mode := uint32(0o660)
	if d.ReadOnly {
		mode = 0o440
	}
	if err := unix.Mknod(node, unix.S_IFBLK|mode, int(unix.Mkdev(d.Major, d.Minor))); err != nil {
		return fmt.Errorf("device %s: mknod: %w", target, err)
	}
	// mknod's mode is filtered by the umask: set it as asked.
	if err := errors.Join(unix.Chmod(node, mode), unix.Chown(node, uid, gid)); err != nil {
		return fmt.Errorf("device %s: %w", target, err)
	}
	return v.bind(Mount{Source: node, Target: target})
}

// place makes m.Target in the view, mounts m.Source there with mount,
// makes it read-only when m says so and records a folder as the view's own.
func (v *mountView) place(m Mount, mount func(target string) error) error {
	if !filepath.IsAbs(m.Target) {
		return fmt.Errorf("mount target %q: not an absolute path", m.Target)
	}
	st, err := os.Stat(m.Source)
	if err != nil {
		return fmt.Errorf("mount source: %w", err)
	}
	target := filepath.Clean(m.Target)
	if err := v.ensure(target, st.IsDir()); err != nil {
		return fmt.Errorf("mount target %s: %w", target, err)
	}
	if err := mount(target); err != nil {
		return err
	}
	if m.ReadOnly {
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("read-only %s: %w", target, err)
		}
	}
	if st.IsDir() {
		v.volumes[target] = true
		if real, err := filepath.EvalSymlinks(target); err == nil {
			v.own[real] = true
		}
	}
	return nil
}

// makeNode makes d's node as name in dir, a volume's folder mounted in the
// view, through a handle of that mount: what the pod put in the volume (a
// link in place of name) is never followed. The umask is cleared while
// the node is made, so that its mode needs no chmod, which would follow a
// link put in its place.
func makeNode(dir, name string, d Device, uid, gid int) error {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("device %s: %w", d.Target, err)
	}
	defer unix.Close(fd)
	mode := uint32(0o660)
	if d.ReadOnly {
		mode = 0o440
	}
	old := unix.Umask(0)
	err = unix.Mknodat(fd, name, unix.S_IFBLK|mode, int(unix.Mkdev(d.Major, d.Minor)))
	unix.Umask(old)
	if err != nil {
		return fmt.Errorf("device %s: mknod: %w", d.Target, err)
	}
	if err := unix.Fchownat(fd, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("device %s: %w", d.Target, err)
	}
	return nil
}

// ensure makes path exist in the view, as a folder or an empty file,
// without changing the host.
func (v *mountView) ensure(path string, dir bool) error {
	path = filepath.Clean(path)
	existing, missing := path, []string(nil)
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append([]string{filepath.Base(existing)}, missing...)
		existing = filepath.Dir(existing)
	}
	if len(missing) == 0 {
		return nil
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return err
	}
	if st, err := os.Stat(real); err != nil || !st.IsDir() {
		return fmt.Errorf("%s is not a folder", existing)
	}
	if !v.own[real] {
		if err := v.shadow(real); err != nil {
			return err
		}
	}
	p := real
	for i, name := range missing {
		p = filepath.Join(p, name)
		if i == len(missing)-1 && !dir {
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			f.Close()
			return nil
		}
		if err := os.Mkdir(p, 0o755); err != nil {
			return err
		}
		v.own[p] = true
	}
	return nil
}

// shadow lays a tmpfs over dir holding what dir held.
func (v *mountView) shadow(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("shadow %s: %w", dir, err)
	}
	// The original stays reachable through this descriptor once covered.
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("shadow %s: %w", dir, err)
	}
	defer unix.Close(fd)
	orig := "/proc/self/fd/" + strconv.Itoa(fd)

	at := dir
	if dir == "/" {
		if v.scratch == "" {
			return errors.New("shadow /: no scratch folder")
		}
		at = filepath.Join(v.scratch, "root")
		if err := os.MkdirAll(at, 0o755); err != nil {
			return err
		}
	}
	mode := fmt.Sprintf("mode=%o", st.Mode().Perm())
	if err := unix.Mount("tmpfs", at, "tmpfs", 0, mode); err != nil {
		return fmt.Errorf("shadow %s: tmpfs: %w", dir, err)
	}
	for _, e := range entries {
		if err := copyEntry(filepath.Join(orig, e.Name()), filepath.Join(at, e.Name())); err != nil {
			return fmt.Errorf("shadow %s: %w", dir, err)
		}
	}
	if dir == "/" {
		if err := switchRoot(at); err != nil {
			return err
		}
	}
	v.own[dir] = true
	return nil
}

// copyEntry recreates src at dst: folders and files as bind mounts (with
// their submounts), symlinks as symlinks.
func copyEntry(src, dst string) error {
	st, err := os.Lstat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // gone meanwhile
	}
	if err != nil {
		return err
	}
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	case st.IsDir():
		if err := os.Mkdir(dst, st.Mode().Perm()); err != nil {
			return err
		}
	default:
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		f.Close()
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", dst, err)
	}
	return nil
}

// switchRoot makes newRoot the process's "/".
func switchRoot(newRoot string) error {
	if err := unix.Chdir(newRoot); err != nil {
		return err
	}
	if err := unix.Mount(newRoot, "/", "", unix.MS_MOVE, ""); err != nil {
		return fmt.Errorf("moving the new root over /: %w", err)
	}
	if err := unix.Chroot("."); err != nil {
		return err
	}
	return unix.Chdir("/")
}
