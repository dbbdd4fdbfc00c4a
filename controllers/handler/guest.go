package handler

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt"
	"github.com/virtkit/virtkit/virt/confined"
	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/launcher"
	"github.com/virtkit/virtkit/virt/storage"
)

// guest is one VMI the handler drives: its Machine and the connections into
// its launcher pod. Reconciles of one VMI never run at once; Ops read dom,
// domain and host, which do not change after the guest is registered.
type guest struct {
	key    types.NamespacedName
	uid    types.UID
	domain string          // libvirt name
	folder types.UID       // the launcher's folder key (launcherPod)
	host   launcher.Layout // the launcher folder as the node sees it
	podUID types.UID       // the launcher pod's UID
	dom    domain.Manager
	pod    *Pod
	// dir is the launcher folder (host), opened once: its sockets and
	// files are reached through it, never by path.
	dir *launcher.Folder
	// socket releases the handle on the launcher's libvirt socket that
	// dom and pod were reached through.
	socket func() error
	// files is the pod's file system, which storage works in.
	files   *confined.Root
	machine *virt.Machine
	storage storage.Interface
	inspect storage.Inspector
	// claims are the claims of its volumes as read when it was taken on
	// (Facts.Claims).
	claims map[string]*virtv1.PersistentVolumeClaimInfo

	// target, while set, is the key of the migration whose target this
	// guest is, not yet taken over: its domain events go to that
	// migration's reconcile instead of the VMI's.
	target atomic.Pointer[types.NamespacedName]
	// outgoing is the migration out of this node that the handler runs or
	// ran for the guest (the source's side); nil when none.
	outgoing *outgoing

	// agent is what the guest's agent last said (pollAgent); nil before
	// the first answer.
	agent atomic.Pointer[AgentFacts]
	// creds are the VMI's access credentials (its spec does not change);
	// credsSet is the digest of those pollAgent last set in the guest
	// (only pollAgent touches it).
	creds    []virtv1.AccessCredential
	credsSet string
	// frozen: the handler froze the guest's file systems (Freeze); thaw
	// thaws them when the unfreeze timeout passes. freezeMu orders
	// Freeze and Unfreeze.
	frozen   atomic.Bool
	freezeMu sync.Mutex
	thaw     *time.Timer

	// startedAt is when the handler started the guest, until its Running
	// status is written (StageReport); zero otherwise.
	startedAt time.Time
	// shutdownAt is when a graceful shutdown was asked for (deletion).
	shutdownAt time.Time
	// ending, once known, is how the VMI ends; it is kept until written.
	ending *Ending

	stopEvents context.CancelFunc
	closeOnce  sync.Once
	closeErr   error
}

// close ends the event stream and releases the connections; what the
// Machine set up stays unless it was stopped before.
func (g *guest) close() error {
	g.closeOnce.Do(func() {
		if g.stopEvents != nil {
			g.stopEvents()
		}
		g.freezeMu.Lock()
		if g.thaw != nil {
			g.thaw.Stop() // the guest is not this handler's any more
			g.thaw = nil
		}
		g.freezeMu.Unlock()
		if o := g.outgoing; o != nil && !o.finished() {
			// Without its connection the migration cannot be watched:
			// abort it, the guest stays here.
			o.cancel()
			<-o.done
		}
		var errs []error
		if g.dom != nil {
			errs = append(errs, g.dom.Close())
		}
		if g.pod != nil && g.pod.Close != nil {
			errs = append(errs, g.pod.Close())
		}
		if g.files != nil {
			errs = append(errs, g.files.Close())
		}
		if g.socket != nil {
			errs = append(errs, g.socket())
		}
		if g.dir != nil {
			errs = append(errs, g.dir.Close())
		}
		g.closeErr = errors.Join(errs...)
	})
	return g.closeErr
}

// register makes g the guest of its VMI.
// After Close, g is let go at once instead.
func (r *Reconciler) register(g *guest) {
	r.mu.Lock()
	closed := r.closed
	if !closed {
		r.guests[g.key] = g
	}
	r.mu.Unlock()
	if closed {
		_ = g.release()
	}
}

// forget drops g and releases its connections.
func (r *Reconciler) forget(g *guest) {
	r.mu.Lock()
	if r.guests[g.key] == g {
		delete(r.guests, g.key)
	}
	delete(r.lost, g.uid)
	r.mu.Unlock()
	_ = g.close()
}

// finish stops g's machine (destroying a guest still running) and undoes
// every start step: no domain, network set-up, DHCP server or prepared disk
// stays. Failures of the domain steps of a launcher that is gone are
// expected (its libvirtd went with it) and only logged.
func (r *Reconciler) finish(ctx context.Context, g *guest) {
	if g.machine != nil && g.machine.Started() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
		err := g.machine.Stop(stopCtx, 0)
		cancel()
		if err != nil {
			_, ended, _ := g.dir.Result()
			level := 0
			if ended || errors.Is(err, domain.ErrConnectionLost) {
				level = 1
			}
			r.log.V(level).Info("stopping the guest left errors", "vmi", g.key, "error", err.Error())
		}
	}
	if g.podUID != "" {
		// The hotplugged images: the pod's folder cannot go while they
		// are bound in it, nor their attachment pods' claims.
		if err := r.binder.Unbind(context.WithoutCancel(ctx), g.podUID, ""); err != nil {
			r.log.Error(err, "unbinding hotplugged images", "vmi", g.key)
		}
	}
	_ = g.close()
}

// release lets go of g without stopping its guest: the Machine's DHCP
// servers stop (they run in this process), the connections close, and the
// guest runs on for the next handler to adopt.
func (g *guest) release() error {
	var err error
	if g.machine != nil {
		err = g.machine.Release()
	}
	return errors.Join(err, g.close())
}
