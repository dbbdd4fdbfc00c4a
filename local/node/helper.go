package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/virtkit/virtkit/internal/linuxproc"
)

// The helper mode: HostRunner starts /proc/self/exe with argv[0] helperArg0
// and helperEnv=1; the program's init then becomes the helper before main
// runs, so every program that imports this package can run pods, and the
// marker cannot be set by accident.
const (
	helperArg0 = "virtkit-pod-helper"
	helperEnv  = "VIRTKIT_POD_HELPER"
)

func init() {
	if len(os.Args) == 1 && os.Args[0] == helperArg0 && os.Getenv(helperEnv) == "1" {
		// setns and execve act on this thread: keep the goroutine on it.
		runtime.LockOSThread()
		os.Exit(helperMain(os.NewFile(3, "spec"), os.NewFile(4, "status")))
	}
}

// helperMain reads the spec, builds the mount view, joins the network
// namespace and executes the command. It returns only on failure, after
// writing "error: WHY" to status; on success the kernel closes status
// (close-on-exec) after the line "exec".
func helperMain(spec, status *os.File) int {
	unix.CloseOnExec(int(status.Fd()))
	fail := func(err error) int {
		fmt.Fprintf(status, "error: %v", err)
		fmt.Fprintf(os.Stderr, "virtkit-pod-helper: %v\n", err)
		return 127
	}
	var s helperSpec
	if err := json.NewDecoder(spec).Decode(&s); err != nil {
		return fail(fmt.Errorf("reading the spec: %w", err))
	}
	spec.Close()
	netns := -1
	if s.NetNS != "" {
		fd, err := unix.Open(s.NetNS, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fail(fmt.Errorf("network namespace %s: %w", s.NetNS, err))
		}
		netns = fd
	}
	// A subPath is resolved now, inside its volume, and mounted through
	// the descriptor opened for it (kept open until the exec), not by its
	// path, which the pod could change in between.
	for i := range s.Mounts {
		m := &s.Mounts[i]
		if m.SubPath == "" {
			continue
		}
		fd, err := openSubPath(m.Source, m.SubPath)
		if err != nil {
			return fail(fmt.Errorf("mount %s: %w", m.Target, err))
		}
		m.Source, m.SubPath = "/proc/self/fd/"+strconv.Itoa(fd), ""
	}
	// A HostToContainer volume is cloned while this namespace's copy of
	// the node's pods folder is still a peer of the node's (a clone of a
	// shared mount joins its peer group); then every mount is made
	// private, so that nothing mounted here reaches the node and nothing
	// the node mounts later reaches the pod, except below those clones.
	trees := map[int]int{}
	for i, m := range s.Mounts {
		if !m.HostToContainer {
			continue
		}
		fd, err := unix.OpenTree(unix.AT_FDCWD, m.Source, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return fail(fmt.Errorf("mount source %s: %w", m.Source, err))
		}
		trees[i] = fd
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fail(fmt.Errorf("making the mount namespace private: %w", err))
	}
	if err := detachNamespaceFiles(); err != nil {
		return fail(err)
	}
	v := newMountView(s.Scratch)
	for i, m := range s.Mounts {
		bind := v.bind
		if fd, ok := trees[i]; ok {
			bind = func(m Mount) error { return v.attach(m, fd) }
		}
		if err := bind(m); err != nil {
			return fail(err)
		}
	}
	uid, gid := 0, 0
	if s.User != nil {
		uid, gid = int(s.User.UID), int(s.User.GID)
	}
	for _, d := range s.Devices {
		if err := v.device(d, uid, gid); err != nil {
			return fail(err)
		}
	}
	dir := s.Dir
	if dir == "" {
		dir = "/"
	}
	if err := v.ensure(dir, true); err != nil {
		return fail(fmt.Errorf("working directory: %w", err))
	}
	if err := unix.Chdir(dir); err != nil {
		return fail(fmt.Errorf("working directory %s: %w", dir, err))
	}
	if netns >= 0 {
		if err := unix.Setns(netns, unix.CLONE_NEWNET); err != nil {
			return fail(fmt.Errorf("joining network namespace %s: %w", s.NetNS, err))
		}
		unix.Close(netns)
	}
	if s.User != nil {
		if err := become(s.User); err != nil {
			return fail(err)
		}
	}
	fmt.Fprint(status, "exec\n")
	err := syscall.Exec(s.Path, s.Args, s.Env)
	return fail(fmt.Errorf("exec %s: %w", s.Path, err))
}

// become makes the process id's: no_new_privs if asked, the supplementary
// groups, the group, then the user, for every thread (Go's syscall package
// applies them to all). Leaving root clears the permitted, effective and
// ambient capabilities. A change of user also clears the parent-death
// signal, which ties the pod's process to the node's: it is set again, and
// if the node ended meanwhile the helper gives up.
func become(id *Identity) error {
	parent := unix.Getppid()
	if id.NoNewPrivs {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("no_new_privs: %w", err)
		}
	}
	groups := make([]int, len(id.Groups))
	for i, g := range id.Groups {
		groups[i] = int(g)
	}
	if err := syscall.Setgroups(groups); err != nil {
		return fmt.Errorf("supplementary groups %v: %w", id.Groups, err)
	}
	if err := syscall.Setresgid(int(id.GID), int(id.GID), int(id.GID)); err != nil {
		return fmt.Errorf("group %d: %w", id.GID, err)
	}
	if err := syscall.Setresuid(int(id.UID), int(id.UID), int(id.UID)); err != nil {
		return fmt.Errorf("user %d: %w", id.UID, err)
	}
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("parent-death signal: %w", err)
	}
	if unix.Getppid() != parent {
		return errors.New("the node ended while the container started")
	}
	return nil
}

// detachNamespaceFiles detaches the namespace files (nsfs mounts: other
// pods' network namespaces, /run/netns entries) the new mount namespace
// copied from the node's: a copy would keep those namespaces alive for as
// long as this pod lives.
func detachNamespaceFiles() error {
	mounts, err := linuxproc.ReadMounts("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	for _, m := range mounts {
		if m.FSType != "nsfs" {
			continue
		}
		if err := unix.Unmount(m.MountPoint, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
			return fmt.Errorf("detaching namespace file %s: %w", m.MountPoint, err)
		}
	}
	return nil
}
