package csidriver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/virtkit/virtkit/internal/linuxproc"
)

// HostMounter is the [Mounter] of a Linux host: bind mounts in the
// caller's mount namespace, and loop devices for Block volumes. It needs
// CAP_SYS_ADMIN.
type HostMounter struct{}

var _ Mounter = HostMounter{}

// BindDir implements [Mounter].
func (HostMounter) BindDir(source, target string, readOnly bool) error {
	return bind(source, target, readOnly)
}

// bind mounts source at target (without recursion: submounts of a volume
// are not the volume's), then makes it read-only if asked.
func bind(source, target string, readOnly bool) error {
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s at %s: %w", source, target, err)
	}
	if readOnly {
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
			return errors.Join(fmt.Errorf("read-only %s: %w", target, err), unix.Unmount(target, 0))
		}
	}
	return nil
}

// loopMajor is the device major number of loop devices.
const loopMajor = 7

// BindBlock implements [Mounter]: source is attached to a free loop
// device, whose node is then mounted at target.
func (HostMounter) BindBlock(source, target string, readOnly bool) error {
	dev, err := attachLoop(source, readOnly)
	if err != nil {
		return err
	}
	if err := bind(dev, target, false); err != nil {
		return errors.Join(err, detachLoop(dev))
	}
	return nil
}

// attachLoop attaches the file to a free loop device and returns the
// device's path.
func attachLoop(file string, readOnly bool) (string, error) {
	flag := os.O_RDWR
	var loFlags uint32
	if readOnly {
		flag, loFlags = os.O_RDONLY, unix.LO_FLAGS_READ_ONLY
	}
	backing, err := os.OpenFile(file, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer backing.Close()
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("loop devices: %w", err)
	}
	defer ctl.Close()
	// Another process may take the free device first: try again.
	for try := 0; ; try++ {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return "", fmt.Errorf("a free loop device: %w", err)
		}
		dev := "/dev/loop" + strconv.Itoa(n)
		err = configureLoop(dev, int(backing.Fd()), loFlags)
		if err == nil {
			return dev, nil
		}
		if !errors.Is(err, unix.EBUSY) || try == 10 {
			return "", fmt.Errorf("attach %s to %s: %w", file, dev, err)
		}
	}
}

func configureLoop(dev string, backing int, flags uint32) error {
	var f *os.File
	var err error
	// The device node appears shortly after the control device makes it.
	for range 50 {
		if f, err = os.OpenFile(dev, os.O_RDWR|unix.O_CLOEXEC, 0); !errors.Is(err, os.ErrNotExist) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.IoctlLoopConfigure(int(f.Fd()), &unix.LoopConfig{Fd: uint32(backing), Info: unix.LoopInfo64{Flags: flags}})
}

func detachLoop(dev string) error {
	f, err := os.OpenFile(dev, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.IoctlSetInt(int(f.Fd()), unix.LOOP_CLR_FD, 0); err != nil && !errors.Is(err, unix.ENXIO) {
		return fmt.Errorf("detach %s: %w", dev, err)
	}
	return nil
}

// Unmount implements [Mounter]. A loop device mounted at target is
// detached once unmounted.
func (m HostMounter) Unmount(target string) error {
	mounted, err := m.IsMounted(target)
	if err != nil || !mounted {
		return err
	}
	var st unix.Stat_t
	loop := ""
	if err := unix.Stat(target, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK && unix.Major(st.Rdev) == loopMajor {
		loop = "/dev/loop" + strconv.Itoa(int(unix.Minor(st.Rdev)))
	}
	if err := unix.Unmount(target, 0); err != nil {
		return fmt.Errorf("unmount %s: %w", target, err)
	}
	if loop != "" {
		return detachLoop(loop)
	}
	return nil
}

// Refresh implements [Mounter]: the loop device mounted at target reads
// its file's size again.
func (HostMounter) Refresh(target string) error {
	var st unix.Stat_t
	if err := unix.Stat(target, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK || unix.Major(st.Rdev) != loopMajor {
		return fmt.Errorf("%s: not a loop device", target)
	}
	f, err := os.OpenFile(target, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.IoctlSetInt(int(f.Fd()), unix.LOOP_SET_CAPACITY, 0); err != nil {
		return fmt.Errorf("%s: new size: %w", target, err)
	}
	return nil
}

// IsMounted implements [Mounter], from /proc/self/mountinfo.
func (HostMounter) IsMounted(target string) (bool, error) {
	mounts, err := linuxproc.ReadMounts("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	target = filepath.Clean(target)
	for _, m := range mounts {
		if m.MountPoint == target {
			return true, nil
		}
	}
	return false, nil
}
