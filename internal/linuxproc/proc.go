package linuxproc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Process is one live process as seen in /proc.
type Process struct {
	PID int
	// Comm is the kernel's short name of the process (/proc/PID/comm).
	Comm string
	// Cmdline is the argument vector joined by spaces, for messages.
	Cmdline string
}

func (p Process) String() string {
	return fmt.Sprintf("pid %d (%s): %s", p.PID, p.Comm, p.Cmdline)
}

// Namespace identifies a namespace by the inode of its /proc/PID/ns link.
type Namespace uint64

// MountNamespaceOf returns the mount namespace of pid.
func MountNamespaceOf(pid int) (Namespace, error) {
	return namespaceOf(pid, "mnt")
}

// OpenMountNamespace opens the mount namespace of pid and returns the open
// file with the namespace's identity. While the file is open the namespace
// cannot end, so its inode cannot name another namespace: the kernel
// reuses the inode of a namespace that ended for the next one it makes. A
// caller that signals the processes of a namespace by its inode must hold
// the file for as long as it does.
func OpenMountNamespace(pid int) (*os.File, Namespace, error) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "ns", "mnt"))
	if err != nil {
		return nil, 0, fmt.Errorf("namespace mnt of pid %d: %w", pid, err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("namespace mnt of pid %d: %w", pid, err)
	}
	return f, Namespace(st.Ino), nil
}

func namespaceOf(pid int, kind string) (Namespace, error) {
	ino, err := inode(filepath.Join("/proc", strconv.Itoa(pid), "ns", kind))
	if err != nil {
		return 0, fmt.Errorf("namespace %s of pid %d: %w", kind, pid, err)
	}
	return Namespace(ino), nil
}

func inode(path string) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// Filter selects processes; it is given the process and its /proc directory.
type Filter func(p Process, dir string) bool

// InMountNamespace selects processes in the mount namespace ns.
func InMountNamespace(ns Namespace) Filter {
	return func(p Process, dir string) bool {
		ino, err := inode(filepath.Join(dir, "ns", "mnt"))
		return err == nil && Namespace(ino) == ns
	}
}

// NamesPath selects processes one of whose arguments names a path below
// dir (dir itself excluded).
func NamesPath(dir string) Filter {
	prefix := strings.TrimSuffix(dir, "/") + "/"
	return func(p Process, _ string) bool { return strings.Contains(p.Cmdline, prefix) }
}

// WithEnv selects processes whose initial environment holds key=value.
func WithEnv(key, value string) Filter {
	want := []byte(key + "=" + value)
	return func(p Process, dir string) bool {
		env, err := os.ReadFile(filepath.Join(dir, "environ"))
		if err != nil {
			return false
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				return true
			}
		}
		return false
	}
}

// SeesMountFrom selects processes whose mount table holds a mount whose
// source path within its filesystem starts with prefix: a process in a private
// mount namespace that bind-mounted a folder below prefix.
func SeesMountFrom(prefix string) Filter {
	return func(p Process, dir string) bool {
		mounts, err := ReadMounts(filepath.Join(dir, "mountinfo"))
		if err != nil {
			return false
		}
		for _, m := range mounts {
			if strings.HasPrefix(m.Root, prefix) || strings.HasPrefix(m.MountPoint, prefix) {
				return true
			}
		}
		return false
	}
}

// InCgroupNamed selects processes whose cgroup path (any line of
// /proc/PID/cgroup) contains name: a container's ID or a pod's UID, which
// the runtime puts in the paths of its cgroups.
func InCgroupNamed(name string) Filter {
	return func(p Process, dir string) bool {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup"))
		if err != nil {
			return false
		}
		for _, line := range strings.Split(string(b), "\n") {
			// hierarchy-ID:controllers:path
			if parts := strings.SplitN(line, ":", 3); len(parts) == 3 && strings.Contains(parts[2], name) {
				return true
			}
		}
		return false
	}
}

// Any selects processes that any of the filters selects.
func Any(filters ...Filter) Filter {
	return func(p Process, dir string) bool {
		for _, f := range filters {
			if f(p, dir) {
				return true
			}
		}
		return false
	}
}

// List returns the live processes (zombies excluded) that the filter selects.
// Processes that end while being read are skipped.
func List(filter Filter) ([]Process, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	self := os.Getpid()
	var out []Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		p, ok := read(pid, dir)
		if !ok {
			continue
		}
		if filter == nil || filter(p, dir) {
			out = append(out, p)
		}
	}
	return out, nil
}

func read(pid int, dir string) (Process, bool) {
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return Process{}, false
	}
	// The state follows the last ')' of "pid (comm) S ...".
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X' {
		return Process{}, false
	}
	comm, _ := os.ReadFile(filepath.Join(dir, "comm"))
	cmd, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
	return Process{
		PID:     pid,
		Comm:    strings.TrimSpace(string(comm)),
		Cmdline: strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " ")),
	}, true
}

// Alive reports whether pid names a live, non-zombie process.
func Alive(pid int) bool {
	_, ok := read(pid, filepath.Join("/proc", strconv.Itoa(pid)))
	return ok
}

// IsNotExist reports whether err says a process or file is gone.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
