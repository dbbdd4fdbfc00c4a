package handler

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit/virt/confined"
	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virt/storage"
)

// Binding is one hotplugged image to bind into a launcher pod.
type Binding struct {
	// Launcher is the launcher pod's UID: the image goes into its
	// contract.HotplugVolume as <Volume>.img.
	Launcher types.UID
	Volume   string
	// Source is the node folder of the claim (the attachment pod's
	// volume) that holds storage.DiskImageName.
	Source string
	// ReadOnly binds the image read-only.
	ReadOnly bool
	// CreateBytes, when positive, is the size of a sparse image made in
	// Source (owned by the QEMU user) if it holds none.
	CreateBytes int64
	// Device, when set, is the device number of a Block claim's device:
	// instead of binding an image, a block device node of that number,
	// owned by the QEMU user, is made as <Volume> in the launcher pod's
	// hotplug folder (Source is not read), as KubeVirt's handler does.
	Device uint64
}

// ImageBinder binds hotplugged images into launcher pods and takes them
// out again. Bind and Unbind are idempotent.
type ImageBinder interface {
	Bind(ctx context.Context, b Binding) error
	// Unbind takes volume's image out of the launcher pod; "" takes out
	// every image bound there.
	Unbind(ctx context.Context, launcher types.UID, volume string) error
}

// NodeBinder is the real ImageBinder: a bind mount of the image onto a
// file of the same name in the launcher pod's hotplug folder on the node
// (PodsDir), which the folder's mount propagation (HostToContainer) carries
// into the pod, or, for a Block claim (Binding.Device), a device node made
// in that folder. The pod owns that folder, so nothing in it is trusted:
// names are resolved with no symbolic link followed, the target is made
// afresh (or must be a regular file, or the same device), and both ends are
// mounted through their handles. The claim's folder is the user's too: its
// image must be a regular file, not a link.
type NodeBinder struct {
	// PodsDir is the kubelet's pods folder as this process sees it.
	PodsDir string
}

var _ ImageBinder = NodeBinder{}

func imageName(volume string) string { return volume + ".img" }

// ErrNotImage: the claim's disk image is not a regular file.
var ErrNotImage = errors.New("the claim's disk image is not a regular file")

// Bind implements ImageBinder.
func (n NodeBinder) Bind(_ context.Context, b Binding) error {
	if b.Device != 0 {
		return n.makeDevice(b)
	}
	src, err := confined.Open(b.Source, confined.NoSymlinks)
	if err != nil {
		return fmt.Errorf("hotplug %s: the claim's folder: %w", b.Volume, err)
	}
	defer src.Close()
	if b.CreateBytes > 0 && !b.ReadOnly {
		if err := createImage(src, b.CreateBytes); err != nil {
			return fmt.Errorf("hotplug %s: %w", b.Volume, err)
		}
	}
	img, imgSt, err := openStat(src, storage.DiskImageName)
	if err != nil {
		return fmt.Errorf("hotplug %s: %w", b.Volume, err)
	}
	defer img.Close()
	if imgSt.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("hotplug %s: %s: %w", b.Volume, img.Name(), ErrNotImage)
	}
	dst, err := confined.Open(contract.EmptyDir(n.PodsDir, b.Launcher, contract.HotplugVolume), confined.NoSymlinks)
	if err != nil {
		return fmt.Errorf("hotplug %s: the launcher pod's hotplug folder: %w", b.Volume, err)
	}
	defer dst.Close()
	name := imageName(b.Volume)
	f, err := dst.OpenFile(name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW, 0o600)
	switch {
	case err == nil:
		f.Close()
	case errors.Is(err, fs.ErrExist):
	default:
		return fmt.Errorf("hotplug %s: %w", b.Volume, err)
	}
	target, st, err := openStat(dst, name)
	if err != nil {
		return fmt.Errorf("hotplug %s: %w", b.Volume, err)
	}
	defer target.Close()
	if st.Dev == imgSt.Dev && st.Ino == imgSt.Ino {
		return nil // bound already
	}
	mounted, err := isMountPoint(dst, target)
	if err != nil {
		return fmt.Errorf("hotplug %s: %w", b.Volume, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || mounted {
		return fmt.Errorf("hotplug %s: %s in the launcher pod's hotplug folder is not the empty file the handler made", b.Volume, name)
	}
	// A detached copy of the image's mount, made read-only before it is
	// attached: the pod never sees it writable.
	tree, err := unix.OpenTree(int(img.Fd()), "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return fmt.Errorf("hotplug %s: binding %s: %w", b.Volume, img.Name(), err)
	}
	defer unix.Close(tree)
	if b.ReadOnly {
		if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
			return fmt.Errorf("hotplug %s: read-only: %w", b.Volume, err)
		}
	}
	if err := unix.MoveMount(tree, "", int(target.Fd()), "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("hotplug %s: binding %s: %w", b.Volume, img.Name(), err)
	}
	return nil
}

// makeDevice makes b's device node in the launcher pod's hotplug folder,
// through a handle of that folder: a link the pod puts there is never
// followed, and a node already there must be the same device.
func (n NodeBinder) makeDevice(b Binding) error {
	dst, err := confined.Open(contract.EmptyDir(n.PodsDir, b.Launcher, contract.HotplugVolume), confined.NoSymlinks)
	if err != nil {
		return fmt.Errorf("hotplug %s: the launcher pod's hotplug folder: %w", b.Volume, err)
	}
	defer dst.Close()
	dir, err := dst.OpenFile(".", unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return fmt.Errorf("hotplug %s: %w", b.Volume, err)
	}
	defer dir.Close()
	mode := uint32(0o660)
	if b.ReadOnly {
		mode = 0o440
	}
	// The umask is cleared while the node is made: its mode then needs
	// no chmod, which would follow a link put in its place.
	old := unix.Umask(0)
	err = unix.Mknodat(int(dir.Fd()), b.Volume, unix.S_IFBLK|mode, int(b.Device))
	unix.Umask(old)
	if errors.Is(err, unix.EEXIST) {
		var st unix.Stat_t
		if err := unix.Fstatat(int(dir.Fd()), b.Volume, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("hotplug %s: %w", b.Volume, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFBLK || st.Rdev != b.Device {
			return fmt.Errorf("hotplug %s: %s in the launcher pod's hotplug folder is not the claim's device", b.Volume, b.Volume)
		}
		return nil // made already
	}
	if err != nil {
		return fmt.Errorf("hotplug %s: making the device node: %w", b.Volume, err)
	}
	if err := unix.Fchownat(int(dir.Fd()), b.Volume, contract.QEMUUser, contract.QEMUGroup, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("hotplug %s: %w", b.Volume, err)
	}
	return nil
}

// blockDevice is the device number of the block device node at path, a
// link not followed.
func blockDevice(path string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return 0, fmt.Errorf("the attachment pod's device: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return 0, fmt.Errorf("the attachment pod's device %s is not a block device", path)
	}
	return st.Rdev, nil
}

// openStat opens name in dir as a handle (O_PATH, the name itself when it
// is a link) and says what it is.
func openStat(dir *confined.Root, name string) (*os.File, unix.Stat_t, error) {
	var st unix.Stat_t
	f, err := dir.OpenFile(name, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, st, err
	}
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, st, err
	}
	return f, st, nil
}

// Unbind implements ImageBinder. A launcher pod whose hotplug folder is
// gone has nothing bound.
func (n NodeBinder) Unbind(_ context.Context, launcher types.UID, volume string) error {
	dst, err := confined.Open(contract.EmptyDir(n.PodsDir, launcher, contract.HotplugVolume), confined.NoSymlinks)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("unplug: the launcher pod's hotplug folder: %w", err)
	}
	defer dst.Close()
	// An image, or a Block claim's device node.
	names := []string{imageName(volume), volume}
	if volume == "" {
		ents, err := dst.ReadDir(".")
		if err != nil {
			return fmt.Errorf("unplug: %w", err)
		}
		names = names[:0]
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".img") || e.Type()&fs.ModeDevice != 0 && e.Type()&fs.ModeCharDevice == 0 {
				names = append(names, e.Name())
			}
		}
	}
	var errs []error
	for _, name := range names {
		errs = append(errs, unbindOne(dst, name))
	}
	return errors.Join(errs...)
}

// unbindOne unmounts the image name in dst, if it is mounted, and removes
// the file.
func unbindOne(dst *confined.Root, name string) error {
	target, err := dst.OpenFile(name, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("unplug %s: %w", name, err)
	}
	mounted, err := isMountPoint(dst, target)
	if err == nil && mounted {
		// Detached: QEMU has let go of the disk, but a reader in the pod
		// must not keep the unplug from finishing.
		err = unix.Unmount(fdPath(target), unix.MNT_DETACH)
	}
	target.Close()
	if err != nil {
		return fmt.Errorf("unplug %s: %w", name, err)
	}
	if err := dst.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("unplug %s: %w", name, err)
	}
	return nil
}

// isMountPoint reports whether f (in dir) is a mount's root: its mount ID
// differs from its folder's.
func isMountPoint(dir *confined.Root, f *os.File) (bool, error) {
	d, err := dir.OpenFile(".", unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return false, err
	}
	defer d.Close()
	var a, b unix.Statx_t
	if err := unix.Statx(int(d.Fd()), "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &a); err != nil {
		return false, err
	}
	if err := unix.Statx(int(f.Fd()), "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &b); err != nil {
		return false, err
	}
	return a.Mnt_id != b.Mnt_id, nil
}

// createImage makes a sparse disk image of size bytes in src, owned by the
// QEMU user, unless one is there.
func createImage(src *confined.Root, size int64) error {
	f, err := src.OpenFile(storage.DiskImageName, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW, 0o660)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating the disk image: %w", err)
	}
	err = errors.Join(f.Truncate(size), f.Chown(contract.QEMUUser, contract.QEMUGroup), f.Close())
	if err != nil {
		return errors.Join(fmt.Errorf("creating the disk image: %w", err), src.Remove(storage.DiskImageName))
	}
	return nil
}

// fdPath is the path through which the kernel reaches f's inode itself.
func fdPath(f *os.File) string { return "/proc/self/fd/" + strconv.Itoa(int(f.Fd())) }
