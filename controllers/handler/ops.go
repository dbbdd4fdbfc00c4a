package handler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
)

var _ nodeapi.Ops = (*Reconciler)(nil)

// ReasonReset is the reason of the event of a reset, KubeVirt's.
const ReasonReset = "Reset"

// running returns the guest of namespace/name, or an error wrapping
// nodeapi.ErrNotFound when the handler runs none. (A guest that ended
// answers the verbs with the domain's state: a conflict.)
func (r *Reconciler) running(namespace, name string) (*guest, error) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	g := r.guest(key)
	if g == nil {
		return nil, fmt.Errorf("handler: VMI %s on node %s: %w", key, r.cfg.NodeName, nodeapi.ErrNotFound)
	}
	return g, nil
}

// Pause stops the guest's vCPUs (nodeapi.Ops). The domain's suspended event
// brings the Paused condition into the VMI's status.
func (r *Reconciler) Pause(ctx context.Context, namespace, name string) error {
	g, err := r.running(namespace, name)
	if err != nil {
		return err
	}
	st, _, err := g.dom.State(ctx, g.domain)
	if err != nil {
		return opError(g, "pause", err)
	}
	if st != domain.StateRunning && st != domain.StateBlocked {
		return fmt.Errorf("handler: pause VMI %s: the guest is %s: %w", g.key, st, nodeapi.ErrConflict)
	}
	return opError(g, "pause", g.dom.Pause(ctx, g.domain))
}

// Unpause lets a paused guest run again (nodeapi.Ops).
func (r *Reconciler) Unpause(ctx context.Context, namespace, name string) error {
	g, err := r.running(namespace, name)
	if err != nil {
		return err
	}
	st, _, err := g.dom.State(ctx, g.domain)
	if err != nil {
		return opError(g, "unpause", err)
	}
	if st != domain.StatePaused {
		return fmt.Errorf("handler: unpause VMI %s: the guest is %s, not paused: %w", g.key, st, nodeapi.ErrConflict)
	}
	return opError(g, "unpause", g.dom.Resume(ctx, g.domain))
}

// SoftReboot asks the guest to reboot (nodeapi.Ops): through the guest agent
// when one answers, else ACPI, as libvirt chooses.
func (r *Reconciler) SoftReboot(ctx context.Context, namespace, name string) error {
	g, err := r.running(namespace, name)
	if err != nil {
		return err
	}
	st, _, err := g.dom.State(ctx, g.domain)
	if err != nil {
		return opError(g, "soft reboot", err)
	}
	if st != domain.StateRunning && st != domain.StateBlocked {
		return fmt.Errorf("handler: soft reboot VMI %s: the guest is %s: %w", g.key, st, nodeapi.ErrConflict)
	}
	return opError(g, "soft reboot", g.dom.Reboot(ctx, g.domain))
}

// Reset presses the guest's reset button (nodeapi.Ops): it restarts at
// once, without shutting down, running or paused (a paused guest stays
// paused, from its firmware on). As KubeVirt's handler, it says so in an
// event on the VMI.
func (r *Reconciler) Reset(ctx context.Context, namespace, name string) error {
	g, err := r.running(namespace, name)
	if err != nil {
		return err
	}
	st, _, err := g.dom.State(ctx, g.domain)
	if err != nil {
		return opError(g, "reset", err)
	}
	if st != domain.StateRunning && st != domain.StateBlocked && st != domain.StatePaused {
		return fmt.Errorf("handler: reset VMI %s: the guest is %s: %w", g.key, st, nodeapi.ErrConflict)
	}
	if err := g.dom.Reset(ctx, g.domain); err != nil {
		return opError(g, "reset", err)
	}
	ref := &virtv1.VirtualMachineInstance{TypeMeta: metav1.TypeMeta{APIVersion: virtv1.GroupVersion.String(), Kind: "VirtualMachineInstance"},
		ObjectMeta: metav1.ObjectMeta{Namespace: g.key.Namespace, Name: g.key.Name, UID: g.uid}}
	r.recorder.Eventf(ref, corev1.EventTypeNormal, ReasonReset, "VirtualMachineInstance reset")
	return nil
}

// Console opens the guest's first serial console (nodeapi.Ops): the unix
// socket QEMU serves it on in the launcher folder, as KubeVirt's handler
// does (libvirt streams only pty consoles); the domain Manager's console
// when there is no such socket. QEMU serves one client at a time: a second
// session waits until the first ends.
func (r *Reconciler) Console(ctx context.Context, namespace, name string) (io.ReadWriteCloser, error) {
	g, err := r.running(namespace, name)
	if err != nil {
		return nil, err
	}
	c, err := g.dir.DialSerial(ctx)
	if errors.Is(err, fs.ErrNotExist) {
		c, err := g.dom.Console(ctx, g.domain)
		return c, opError(g, "console", err)
	}
	if err != nil {
		return nil, fmt.Errorf("handler: console of VMI %s: %w: %w", g.key, nodeapi.ErrUnavailable, err)
	}
	return c, nil
}

// VNC opens the guest's VNC server (nodeapi.Ops), the unix socket QEMU
// serves it on in the launcher folder.
func (r *Reconciler) VNC(ctx context.Context, namespace, name string) (io.ReadWriteCloser, error) {
	g, err := r.running(namespace, name)
	if err != nil {
		return nil, err
	}
	c, err := g.dir.DialVNC(ctx)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("handler: VNC of VMI %s: the guest has no graphics device: %w", g.key, nodeapi.ErrUnavailable)
	}
	if err != nil {
		return nil, fmt.Errorf("handler: VNC of VMI %s: %w: %w", g.key, nodeapi.ErrUnavailable, err)
	}
	return c, nil
}

// Screenshot returns the guest's display as a PNG (nodeapi.Ops), converted
// from the hypervisor's format when that is not PNG already.
func (r *Reconciler) Screenshot(ctx context.Context, namespace, name string) ([]byte, error) {
	g, err := r.running(namespace, name)
	if err != nil {
		return nil, err
	}
	shot, err := g.dom.Screenshot(ctx, g.domain)
	if errors.Is(err, domain.ErrUnsupported) {
		return nil, fmt.Errorf("handler: screenshot of VMI %s: the guest has no graphics device: %w: %w", g.key, nodeapi.ErrUnavailable, err)
	}
	if err != nil {
		return nil, opError(g, "screenshot", err)
	}
	b, err := shot.PNG()
	if err != nil {
		return nil, fmt.Errorf("handler: screenshot of VMI %s: %w", g.key, err)
	}
	return b, nil
}

// opError maps a domain Manager's error to the node API's sentinels.
func opError(g *guest, op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, domain.ErrInvalidState):
		return fmt.Errorf("handler: %s VMI %s: %w: %w", op, g.key, nodeapi.ErrConflict, err)
	case errors.Is(err, domain.ErrNotFound):
		return fmt.Errorf("handler: %s VMI %s: %w: %w", op, g.key, nodeapi.ErrNotFound, err)
	case errors.Is(err, domain.ErrConnectionLost), errors.Is(err, domain.ErrClosed), errors.Is(err, domain.ErrUnsupported):
		return fmt.Errorf("handler: %s VMI %s: %w: %w", op, g.key, nodeapi.ErrUnavailable, err)
	}
	return fmt.Errorf("handler: %s VMI %s: %w", op, g.key, err)
}
