package node

import (
	"context"
	"os"
	"path/filepath"
)

// ProcessRunner starts a container's process in its pod's namespaces. The
// host implementation is [HostRunner]; local/node/nodefake has a fake.
type ProcessRunner interface {
	// Start starts spec's process and returns once it runs the container's
	// command (or failed to: the error says why, e.g. the executable or a
	// mount source is missing).
	Start(ctx context.Context, spec ProcessSpec) (Process, error)
	// Exec runs argv in p's namespaces (an exec probe) and returns its exit
	// code and combined output. ctx bounds it.
	Exec(ctx context.Context, p Process, argv []string) (exitCode int, output []byte, err error)
	// Kill ends what is left of a container: the process group of ref's
	// process, if it still runs as ref describes, and every process in its
	// mount namespace. A gone process is no error. It serves a node that
	// restarted too.
	Kill(ctx context.Context, ref ProcessRef) error
	// Reap ends every process in the network namespace file netns: what is
	// left of a pod whose containers ended (children that left their process
	// group, such as daemons). A missing netns is no error.
	Reap(ctx context.Context, netns string) error
}

// ProcessSpec is one container's process.
type ProcessSpec struct {
	// Path is the executable's host path; Args is argv, Args[0] included.
	Path string
	Args []string
	// Env is the whole environment ("NAME=value").
	Env []string
	// Dir is the working directory in the pod's view; default "/".
	Dir string
	// NetNS is the network namespace file to join; empty keeps the host's.
	NetNS string
	// Mounts are bind-mounted, in order, in the process's own mount namespace.
	Mounts []Mount
	// Devices are block device nodes made in the view after the mounts
	// (a container's volumeDevices).
	Devices []Device
	// Scratch is a folder of the pod's the runner may use while it builds
	// the mount view; it is removed with the pod.
	Scratch string
	// Log receives the process's stdout and stderr.
	Log *os.File
	// User is who the process runs as; nil runs it as the node does (root).
	User *Identity
}

// Mount is a bind mount of a host file or folder into a pod's view.
type Mount struct {
	// Source is the host path; Target the path in the pod's view, which
	// need not exist on the host (the host is not changed to create it).
	Source, Target string
	// SubPath, when set, is a path below Source (a volumeMount's subPath)
	// that is mounted instead of Source. It is resolved when the mount is
	// made, inside Source only, and mounted through a descriptor of what
	// it named: a pod that controls the volume's contents cannot send the
	// mount outside it with a link.
	SubPath  string
	ReadOnly bool
	// HostToContainer lets mounts the node makes below Source later appear
	// in the view (Kubernetes' mountPropagation HostToContainer; Source
	// must be below a shared mount, as the node's pods folder is). Other
	// mounts are private, as the kubelet makes them by default.
	HostToContainer bool
}

// Device is a block device node in a pod's view, as a container runtime
// makes one for a volumeDevice: a node of the pod's own, not the host's,
// owned by the container's user and group (containerd's
// device_ownership_from_security_context), so that changing its owner or
// mode changes nothing outside the pod.
type Device struct {
	// Target is the node's path in the pod's view; it must not exist there.
	Target string
	// Major and Minor are the host device's numbers.
	Major, Minor uint32
	// ReadOnly makes the node readable only (mode 0440; else 0660).
	ReadOnly bool
}

// Path is the host path m shows: Source, or its SubPath below it. A
// runner that mounts it must resolve SubPath as the host runner does,
// not mount this path, which links in the volume could redirect.
func (m Mount) Path() string {
	if m.SubPath == "" {
		return m.Source
	}
	return filepath.Join(m.Source, m.SubPath)
}

// Process is a started container process.
type Process interface {
	// Ref identifies the process across node restarts.
	Ref() ProcessRef
	// Wait waits for the process to end.
	Wait() ExitStatus
	// Signal signals the process (SIGTERM on delete: its children are the
	// process's to stop).
	Signal(sig os.Signal) error
	// Root is a host path through which the process's view of the file
	// system is seen (/proc/PID/root), for probes.
	Root() string
}

// ProcessRef identifies a process: its PID and its start time in clock
// ticks since boot (/proc/PID/stat field 22), so a reused PID is not mistaken
// for it, and its mount namespace (the inode of /proc/PID/ns/mnt), which its
// descendants share unless they make their own.
type ProcessRef struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"startTime"`
	MountNS   uint64 `json:"mountNS,omitempty"`
}

// ExitStatus is how a process ended.
type ExitStatus struct {
	// Code is the exit code, or 128+signal for a process killed by a signal.
	Code int
	// Signal is the signal that killed it, if one did.
	Signal int
}
