package nodeapi

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"sync"
	"time"

	virtv1 "kubevirt.io/api/core/v1"
)

// Fake is an in-memory Ops for tests: VMIs added with Set run and can be
// paused, unpaused and soft-rebooted; their console and VNC streams echo what
// is written to them, as a terminal with local echo would. It passes the same
// contract suite as Client over Server. It records no timing and does not
// model guests that ignore a reboot.
type Fake struct {
	mu   sync.Mutex
	vmis map[string]*FakeVMI
}

var _ Ops = (*Fake)(nil)

// FakeVMI is the state of one VMI in a Fake.
type FakeVMI struct {
	// Paused is whether the guest's vCPUs are stopped.
	Paused bool
	// SoftReboots counts the reboots asked for.
	SoftReboots int
	// Resets counts the resets.
	Resets int
	// Unavailable makes every verb fail with ErrUnavailable, as when the
	// node cannot reach the VMI's launcher.
	Unavailable bool
	// NoVNC makes VNC and Screenshot fail with ErrUnavailable (no
	// graphics device).
	NoVNC bool
	// NoAgent makes the guest-agent verbs fail with ErrUnavailable.
	NoAgent bool
	// Frozen is whether the guest's file systems are frozen, and
	// UnfreezeTimeout the limit the last Freeze gave.
	Frozen          bool
	UnfreezeTimeout time.Duration
}

// NewFake returns a Fake with no VMIs.
func NewFake() *Fake { return &Fake{vmis: map[string]*FakeVMI{}} }

// Set makes namespace/name run on this fake node with state st, replacing
// any state it had.
func (f *Fake) Set(namespace, name string, st FakeVMI) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.vmis[namespace+"/"+name] = &st
}

// Remove makes namespace/name no longer run here.
func (f *Fake) Remove(namespace, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.vmis, namespace+"/"+name)
}

// State returns a copy of the VMI's state and whether it runs here.
func (f *Fake) State(namespace, name string) (FakeVMI, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.vmis[namespace+"/"+name]
	if !ok {
		return FakeVMI{}, false
	}
	return *v, true
}

// with runs fn on the VMI's state under the lock.
func (f *Fake) with(namespace, name string, fn func(v *FakeVMI) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.vmis[namespace+"/"+name]
	if !ok {
		return fmt.Errorf("VirtualMachineInstance %s/%s: %w", namespace, name, ErrNotFound)
	}
	if v.Unavailable {
		return fmt.Errorf("VirtualMachineInstance %s/%s: launcher not reachable: %w", namespace, name, ErrUnavailable)
	}
	return fn(v)
}

// Pause implements Ops.
func (f *Fake) Pause(_ context.Context, namespace, name string) error {
	return f.with(namespace, name, func(v *FakeVMI) error {
		if v.Paused {
			return fmt.Errorf("VirtualMachineInstance %s/%s is already paused: %w", namespace, name, ErrConflict)
		}
		v.Paused = true
		return nil
	})
}

// Unpause implements Ops.
func (f *Fake) Unpause(_ context.Context, namespace, name string) error {
	return f.with(namespace, name, func(v *FakeVMI) error {
		if !v.Paused {
			return fmt.Errorf("VirtualMachineInstance %s/%s is not paused: %w", namespace, name, ErrConflict)
		}
		v.Paused = false
		return nil
	})
}

// SoftReboot implements Ops.
func (f *Fake) SoftReboot(_ context.Context, namespace, name string) error {
	return f.with(namespace, name, func(v *FakeVMI) error {
		if v.Paused {
			return fmt.Errorf("VirtualMachineInstance %s/%s is paused: %w", namespace, name, ErrConflict)
		}
		v.SoftReboots++
		return nil
	})
}

// Reset implements Ops.
func (f *Fake) Reset(_ context.Context, namespace, name string) error {
	return f.with(namespace, name, func(v *FakeVMI) error {
		v.Resets++
		return nil
	})
}

// Console implements Ops with an echoing stream.
func (f *Fake) Console(_ context.Context, namespace, name string) (io.ReadWriteCloser, error) {
	if err := f.with(namespace, name, func(*FakeVMI) error { return nil }); err != nil {
		return nil, err
	}
	return newEcho(), nil
}

// display fails unless namespace/name has a graphics device.
func (f *Fake) display(namespace, name string) error {
	return f.with(namespace, name, func(v *FakeVMI) error {
		if v.NoVNC {
			return fmt.Errorf("VirtualMachineInstance %s/%s has no graphics device: %w", namespace, name, ErrUnavailable)
		}
		return nil
	})
}

// Screenshot implements Ops with a black PNG of FakeScreenWidth x
// FakeScreenHeight pixels.
func (f *Fake) Screenshot(_ context.Context, namespace, name string) ([]byte, error) {
	if err := f.display(namespace, name); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, FakeScreenWidth, FakeScreenHeight))); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// FakeScreenWidth and FakeScreenHeight are the size of a Fake's screenshots.
const (
	FakeScreenWidth  = 720
	FakeScreenHeight = 400
)

// agent runs fn on a VMI whose agent answers.
func (f *Fake) agent(namespace, name string, fn func(v *FakeVMI) error) error {
	return f.with(namespace, name, func(v *FakeVMI) error {
		if v.NoAgent {
			return fmt.Errorf("VirtualMachineInstance %s/%s: no guest agent answers: %w", namespace, name, ErrUnavailable)
		}
		return fn(v)
	})
}

// FakeOS is the OS name of a Fake's guests.
const FakeOS = "fake guest OS"

// GuestOSInfo implements Ops: agent version "fake", OS FakeOS, the VMI's
// name as host name.
func (f *Fake) GuestOSInfo(_ context.Context, namespace, name string) (virtv1.VirtualMachineInstanceGuestAgentInfo, error) {
	var out virtv1.VirtualMachineInstanceGuestAgentInfo
	err := f.agent(namespace, name, func(v *FakeVMI) error {
		out = virtv1.VirtualMachineInstanceGuestAgentInfo{GAVersion: "fake", Hostname: name, Timezone: "UTC, 0",
			OS: virtv1.VirtualMachineInstanceGuestOSInfo{Name: FakeOS, ID: "fake"}}
		if v.Frozen {
			out.FSFreezeStatus = "frozen"
		}
		return nil
	})
	return out, err
}

// UserList implements Ops: nobody is logged in.
func (f *Fake) UserList(_ context.Context, namespace, name string) (virtv1.VirtualMachineInstanceGuestOSUserList, error) {
	return virtv1.VirtualMachineInstanceGuestOSUserList{Items: []virtv1.VirtualMachineInstanceGuestOSUser{}},
		f.agent(namespace, name, func(*FakeVMI) error { return nil })
}

// FilesystemList implements Ops: one root file system.
func (f *Fake) FilesystemList(_ context.Context, namespace, name string) (virtv1.VirtualMachineInstanceFileSystemList, error) {
	return virtv1.VirtualMachineInstanceFileSystemList{Items: []virtv1.VirtualMachineInstanceFileSystem{
			{DiskName: "vda1", MountPoint: "/", FileSystemType: "ext4", UsedBytes: 1 << 20, TotalBytes: 1 << 30}}},
		f.agent(namespace, name, func(*FakeVMI) error { return nil })
}

// Freeze implements Ops.
func (f *Fake) Freeze(_ context.Context, namespace, name string, unfreezeTimeout time.Duration) error {
	return f.agent(namespace, name, func(v *FakeVMI) error {
		v.Frozen, v.UnfreezeTimeout = true, unfreezeTimeout
		return nil
	})
}

// Unfreeze implements Ops.
func (f *Fake) Unfreeze(_ context.Context, namespace, name string) error {
	return f.agent(namespace, name, func(v *FakeVMI) error {
		v.Frozen = false
		return nil
	})
}

// VNC implements Ops with an echoing stream.
func (f *Fake) VNC(_ context.Context, namespace, name string) (io.ReadWriteCloser, error) {
	if err := f.display(namespace, name); err != nil {
		return nil, err
	}
	return newEcho(), nil
}

// echo is a stream that reads back what was written to it. Writes never
// block; Close ends reads with io.EOF once the buffer is drained.
type echo struct {
	mu     sync.Mutex
	cond   *sync.Cond
	buf    []byte
	closed bool
}

func newEcho() *echo {
	e := &echo{}
	e.cond = sync.NewCond(&e.mu)
	return e
}

func (e *echo) Read(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for len(e.buf) == 0 && !e.closed {
		e.cond.Wait()
	}
	if len(e.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, e.buf)
	e.buf = e.buf[n:]
	return n, nil
}

func (e *echo) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return 0, io.ErrClosedPipe
	}
	e.buf = append(e.buf, p...)
	e.cond.Broadcast()
	return len(p), nil
}

func (e *echo) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	e.buf = nil
	e.cond.Broadcast()
	return nil
}
