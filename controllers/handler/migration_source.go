package handler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/libvirtd"
	"github.com/virtkit/virtkit/virt/migrate"
)

// outgoing is a migration out of this node that the source's handler runs
// for a guest: virt/migrate.Run on the source launcher's libvirt, through
// the migration proxy, in a goroutine of its own.
type outgoing struct {
	uid    types.UID
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	mode     virtv1.MigrationMode // as the last progress report said
	reported virtv1.MigrationMode // as the VMI says
	res      migrate.Result
	err      error // Run's, once done
	aborting bool  // the cancel was asked for
	ended    bool  // the end was written to the VMI
}

func (o *outgoing) finished() bool {
	select {
	case <-o.done:
		return true
	default:
		return false
	}
}

// syncOutgoing is the source's side of a migration of g's guest, from the
// VMI's status.migrationState: it starts the migration once the target is
// ready (targetNodeAddress set) and it is neither cancelled nor over,
// writing startTimestamp first so that the controller cannot fail it
// meanwhile; while it runs, it writes the mode and cancels on
// abortRequested; when it did not complete, it writes completed and failed
// with the reason (abortStatus Succeeded for a cancel) and the guest goes
// on here. A migration that completed is left to the target's handler,
// which takes the VMI over. handled says the reconcile must not go on to
// read the guest's domain (it is moving, or gone from here).
func (r *Reconciler) syncOutgoing(ctx context.Context, vmi *virtv1.VirtualMachineInstance, g *guest) (res ctrl.Result, handled bool, err error) {
	ms := vmi.Status.MigrationState
	if ms == nil || ms.MigrationUID == "" || ms.SourceNode != r.cfg.NodeName {
		return ctrl.Result{}, false, nil
	}
	log := logf.FromContext(ctx)
	o := g.outgoing
	if o == nil || o.uid != ms.MigrationUID {
		switch {
		case ms.Completed || ms.Failed || ms.AbortRequested || vmi.DeletionTimestamp != nil:
			return ctrl.Result{}, false, nil
		case ms.StartTimestamp != nil:
			// Started by an earlier handler process: its proxy went with
			// it, so the migration cannot complete. Say so unless the
			// guest left already.
			if _, _, err := g.dom.State(ctx, g.domain); errors.Is(err, domain.ErrNotFound) {
				return ctrl.Result{}, true, nil
			}
			return ctrl.Result{}, false, r.endOutgoing(ctx, vmi, ms.Mode, "the source's handler restarted while the migration ran", false)
		case ms.TargetNodeAddress == "":
			return ctrl.Result{}, false, nil // the target is not ready
		}
		now := metav1.NewTime(r.clock.Now())
		if err := r.patchMigrationState(ctx, vmi, func(ms *virtv1.VirtualMachineInstanceMigrationState) {
			ms.StartTimestamp, ms.Mode = &now, virtv1.MigrationPreCopy
		}); err != nil {
			return ctrl.Result{}, true, err
		}
		g.outgoing = r.startOutgoing(vmi, g)
		log.Info("migration started", "migration", ms.MigrationUID, "target", ms.TargetNode)
		return ctrl.Result{}, true, nil
	}

	o.mu.Lock()
	mode, reported, ended := o.mode, o.reported, o.ended
	o.mu.Unlock()
	if !o.finished() {
		if (ms.AbortRequested || vmi.DeletionTimestamp != nil) && !o.aborting {
			log.Info("migration abort requested (or the VMI deleted): cancelling it")
			o.aborting = true
			o.cancel()
		}
		if mode != "" && mode != reported && mode != ms.Mode {
			if err := r.patchMigrationState(ctx, vmi, func(ms *virtv1.VirtualMachineInstanceMigrationState) { ms.Mode = mode }); err != nil {
				return ctrl.Result{}, true, err
			}
			o.mu.Lock()
			o.reported = mode
			o.mu.Unlock()
		}
		return ctrl.Result{}, true, nil
	}
	if o.err == nil {
		// Completed: the guest runs on the target, whose handler takes
		// the VMI over; this one lets it go when status.nodeName moves.
		return ctrl.Result{}, true, nil
	}
	if !ended {
		var merr *migrate.Error
		reason := o.err.Error()
		cancelled := errors.As(o.err, &merr) && errors.Is(merr.Reason, migrate.ErrCancelled)
		if err := r.endOutgoing(ctx, vmi, o.res.Mode, reason, cancelled || ms.AbortRequested); err != nil {
			return ctrl.Result{}, true, err
		}
		o.mu.Lock()
		o.ended = true
		o.mu.Unlock()
		log.Info("migration did not complete; the guest goes on here", "reason", reason, "duration", o.res.Duration)
	}
	return ctrl.Result{}, false, nil
}

// endOutgoing writes the end of a migration that did not complete.
func (r *Reconciler) endOutgoing(ctx context.Context, vmi *virtv1.VirtualMachineInstance, mode virtv1.MigrationMode, reason string, aborted bool) error {
	now := metav1.NewTime(r.clock.Now())
	return r.patchMigrationState(ctx, vmi, func(ms *virtv1.VirtualMachineInstanceMigrationState) {
		ms.Completed, ms.Failed, ms.FailureReason, ms.EndTimestamp = true, true, reason, &now
		if mode != "" {
			ms.Mode = mode
		}
		if aborted {
			ms.AbortStatus = virtv1.MigrationAbortSucceeded
		}
	})
}

// startOutgoing runs the migration the VMI's migrationState describes in
// a goroutine; its progress and end reach the VMI's reconcile as events.
func (r *Reconciler) startOutgoing(vmi *virtv1.VirtualMachineInstance, g *guest) *outgoing {
	ctx, cancel := context.WithCancel(context.Background())
	o := &outgoing{uid: vmi.Status.MigrationState.MigrationUID, cancel: cancel, done: make(chan struct{}),
		mode: virtv1.MigrationPreCopy, reported: virtv1.MigrationPreCopy}
	vmi = vmi.DeepCopy()
	notify := func() {
		select {
		case r.events <- event.TypedGenericEvent[types.NamespacedName]{Object: g.key}:
		case <-time.After(time.Second): // the reconcile looks again on its own
		}
	}
	go func() {
		defer notify()
		defer close(o.done)
		defer cancel()
		res, err := r.runOutgoing(ctx, vmi, g, func(p migrate.Progress) {
			o.mu.Lock()
			changed := o.mode != p.Mode
			o.mode = p.Mode
			o.mu.Unlock()
			if changed {
				go notify()
			}
		})
		o.mu.Lock()
		o.res, o.err = res, err
		if res.Mode != "" {
			o.mode = res.Mode
		}
		o.mu.Unlock()
	}()
	return o
}

// runOutgoing migrates g's guest to the target of the VMI's
// migrationState: the migration proxy forwards the source launcher's
// connections to the target launcher (MigrationDialer), and migrate.Run
// drives the migration over them with the configuration the migration
// controller resolved.
func (r *Reconciler) runOutgoing(ctx context.Context, vmi *virtv1.VirtualMachineInstance, g *guest, progress func(migrate.Progress)) (migrate.Result, error) {
	ms := vmi.Status.MigrationState
	log := r.log.WithValues("vmi", g.key.String(), "migration", ms.MigrationUID)
	cfg, err := migrate.ClusterConfig(ms.MigrationConfiguration)
	if err != nil {
		return migrate.Result{}, err
	}
	if ms.MigrationPolicyName != nil {
		cfg.Policy = *ms.MigrationPolicyName
	}
	if onSharedStorage(vmi) {
		// libvirt judges a disk it does not copy by its file system, and
		// calls a local one unsafe; a ReadWriteMany claim is shared by
		// the cluster's word, also where libvirt sees a local file system
		// (a folder provisioner on one machine, a CSI driver it does not
		// know).
		cfg.UnsafeMigrationOverride = true
	}
	src, ok := g.dom.(migrate.Host)
	if !ok {
		return migrate.Result{}, errors.New("handler: the launcher's domain Manager cannot migrate (not a domain.Migrator)")
	}
	targetPod, err := r.launcherPod(ctx, vmi, ms.MigrationUID, ms.TargetNode)
	if err != nil {
		return migrate.Result{}, err
	}
	t := MigrationTarget{Migration: ms.MigrationUID, VMI: vmi.UID, Namespace: vmi.Namespace, Name: vmi.Name, Pod: targetPod,
		Node: ms.TargetNode, Address: ms.TargetNodeAddress, DisableTLS: cfg.DisableTLS}
	proxy, err := startProxy(g.dir, t, r.dialer, func(err error) { log.V(1).Info("migration proxy", "error", err.Error()) })
	if err != nil {
		return migrate.Result{}, err
	}
	defer proxy.Close()

	// Paths as the source launcher sees them: its libvirtd and QEMU dial them.
	pod := r.podLayout(vmi.UID)
	dest := migrate.Destination{
		URI:          libvirtd.PeerSocketURI(MigrationSocket(pod, ChannelLibvirt)),
		MigrationURI: "unix://" + MigrationSocket(pod, ChannelMemory),
		DisksURI:     "unix://" + MigrationSocket(pod, ChannelDisks),
	}
	// The target's own connection, through the proxy: the downtime is read
	// there, and what it kept of a failed migration removed.
	// The proxy's socket is found in the folder as any other there (the pod
	// could swap it for a link).
	tc, err := func() (domain.Manager, error) {
		path, release, err := g.dir.Root().SocketPath(migrationSocketName(ChannelLibvirt))
		if err != nil {
			return nil, err
		}
		defer release() // libvirt has dialled by then
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		return r.connect(cctx, libvirtd.SocketURI(path))
	}()
	if err == nil {
		defer tc.Close()
		if h, ok := tc.(migrate.Host); ok {
			dest.Host = h
		}
	} else {
		log.Info("no connection of the source's own to the target launcher: the downtime will not be known", "error", err.Error())
	}
	opts := []migrate.Option{
		migrate.WithLogger(log),
		migrate.WithDataSize(migrate.DataSize(vmi, 0)),
		migrate.WithProgress(progress),
	}
	if migrationMethod(vmi) == virtv1.BlockMigration {
		running, err := r.runningDomain(ctx, g)
		if err != nil {
			return migrate.Result{}, err
		}
		opts = append(opts, migrate.WithCopyStorage(domain.CopyIncremental, localDisks(vmi, running.Targets)...))
	}
	res, err := migrate.Run(ctx, src, g.domain, dest, cfg, opts...)
	if err != nil {
		if perr := proxy.err(); perr != nil {
			err = fmt.Errorf("%w; the target was not reached: %v", err, perr)
		}
	}
	if err == nil {
		log.Info("migration completed", "duration", res.Duration, "downtime", res.Downtime, "mode", res.Mode,
			"movedMiB", res.DataProcessed>>20, "iterations", res.Iterations)
	}
	return res, err
}
