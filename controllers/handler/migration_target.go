package handler

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/virtkit/virtkit/controllers/conditions"
	vmictl "github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/virt"
	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/storage/hotplug"
)

// How often the target's handler looks at an incoming domain besides its
// events: often once the domain runs here (the migration's end is near and
// sends no event of its own once the job is gone), seldom before.
const (
	incomingPoll = time.Second
	arrivingPoll = 50 * time.Millisecond
)

// incomingSteps turns a start-up chain into a migration target's: storage
// and network are prepared as for a start, but no domain is defined or
// started, since it comes by migration. The define and start steps keep
// their Undo (undefine, destroy), which then removes the domain that came.
func incomingSteps(steps virt.Steps) (virt.Steps, error) {
	noRun := func(s virt.Step) virt.Step {
		s.Run = func(context.Context, *virt.Machine) error { return nil }
		return s
	}
	steps, err := steps.Edit(virt.StepDefine, noRun)
	if err != nil {
		return nil, err
	}
	return steps.Edit(virt.StepStart, noRun)
}

// reconcileTarget is the target's side of a migration, keyed by the
// VirtualMachineInstanceMigration: once the migration is PreparingTarget
// with its target pod on this node, it prepares storage and network in the
// target pod exactly as for a start (the guest keeps its MAC, and with
// masquerade its 10.0.2.2; the pod's own address is the VMI's new one),
// without starting a domain, and says so in the VMI's
// status.migrationState.targetNodeAddress. When the guest runs here after
// the migration, it takes the VMI over in one status write (nodeName,
// interfaces, migrationState completed) and drives it from then on as any
// guest it started. A migration that fails, is cancelled or goes away has
// everything it prepared undone.
func (r *Reconciler) reconcileTarget(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := req.NamespacedName
	g := r.targetGuest(key)
	mig := &virtv1.VirtualMachineInstanceMigration{}
	if err := r.client.Get(ctx, key, mig); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.abandonTarget(ctx, key, g, "the migration is gone")
		}
		return ctrl.Result{}, fmt.Errorf("handler: migration %s: %w", key, err)
	}
	if ms := mig.Status.MigrationState; ms == nil || ms.TargetNode != r.cfg.NodeName {
		return ctrl.Result{}, r.abandonTarget(ctx, key, g, "the migration's target is not this node")
	}
	vmi := &virtv1.VirtualMachineInstance{}
	if err := r.reader.Get(ctx, types.NamespacedName{Namespace: mig.Namespace, Name: mig.Spec.VMIName}, vmi); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.abandonTarget(ctx, key, g, "the VMI is gone")
		}
		return ctrl.Result{}, fmt.Errorf("handler: migration %s: VirtualMachineInstance %s: %w", key, mig.Spec.VMIName, err)
	}
	ms := vmi.Status.MigrationState
	switch {
	case ms == nil || ms.MigrationUID != mig.UID:
		return ctrl.Result{}, r.abandonTarget(ctx, key, g, "the VMI records another migration")
	case ms.Failed || mig.Status.Phase == virtv1.MigrationFailed:
		return ctrl.Result{}, r.abandonTarget(ctx, key, g, "the migration failed")
	case ms.Completed:
		return ctrl.Result{}, nil // taken over already
	}
	log := logf.FromContext(ctx).WithValues("vmi", vmi.Namespace+"/"+vmi.Name, "migration", mig.Name)
	if g == nil {
		if mig.Status.Phase != virtv1.MigrationPreparingTarget {
			return ctrl.Result{}, nil // the controller hands it over once the target pod is ready
		}
		var err error
		if g, err = r.prepareTarget(ctx, vmi, mig); err != nil {
			if errors.Is(err, errLauncherUnreachable) {
				log.Info("target launcher not reachable yet", "error", err.Error())
				return ctrl.Result{RequeueAfter: readyPoll}, nil
			}
			// Nothing was left set up (the Machine undid its steps): the
			// migration fails, the source goes on.
			return ctrl.Result{}, errors.Join(err, r.failIncoming(ctx, vmi, "preparing the target failed: "+err.Error()))
		}
		log.Info("migration target prepared", "folder", g.folder)
	}
	if ms.TargetNodeAddress == "" {
		// The guest's hotplugged disks must be in the target pod before
		// the source may send it.
		waiting, err := r.bindIncoming(ctx, vmi, g)
		if err != nil {
			return ctrl.Result{}, errors.Join(err, r.failIncoming(ctx, vmi, "preparing the target failed: "+err.Error()),
				r.abandonTarget(ctx, key, g, err.Error()))
		}
		if waiting != "" {
			log.Info("waiting for a hotplugged disk's attachment pod", "why", waiting)
			return ctrl.Result{RequeueAfter: readyPoll}, nil
		}
		if err := r.patchMigrationState(ctx, vmi, func(ms *virtv1.VirtualMachineInstanceMigrationState) {
			ms.TargetNodeAddress = r.cfg.MigrationAddress
		}); err != nil {
			return ctrl.Result{}, err
		}
	}
	ds, arrived, err := r.incomingArrived(ctx, g)
	switch {
	case err != nil || (!arrived && ds == nil):
		return ctrl.Result{RequeueAfter: incomingPoll}, nil
	case !arrived:
		return ctrl.Result{RequeueAfter: arrivingPoll}, nil
	}
	return ctrl.Result{}, r.takeOver(ctx, key, vmi, g, ds)
}

// bindIncoming binds the images of the disks the guest has hotplugged
// (vmictl.AttachedHotplug) into the target pod from its attachment pods,
// which controllers/migration made and saw Ready. It says what it waits
// for ("" once every image is bound); an image that cannot be bound is an
// error, and the migration fails.
func (r *Reconciler) bindIncoming(ctx context.Context, vmi *virtv1.VirtualMachineInstance, g *guest) (string, error) {
	want := wantedHotplug(vmi)
	for _, name := range vmictl.AttachedHotplug(vmi) {
		plan, ok := g.machine.StoragePlan[name]
		if !ok {
			return "", fmt.Errorf("hotplugged volume %s: not planned in the target pod", name)
		}
		st, _, err := r.bringImage(ctx, vmi, g, want[name], plan)
		switch {
		case err != nil:
			return "", err
		case st == nil:
		case st.Reason == hotplug.ReasonAttachFailed:
			return "", fmt.Errorf("hotplugged volume %s: %s", name, st.Message)
		default:
			return fmt.Sprintf("volume %s: %s", name, st.Message), nil
		}
	}
	return "", nil
}

// prepareTarget connects to the migration's target launcher (its folder
// key is the migration's UID) and runs the target's start-up chain.
func (r *Reconciler) prepareTarget(ctx context.Context, vmi *virtv1.VirtualMachineInstance, mig *virtv1.VirtualMachineInstanceMigration) (*guest, error) {
	key := client.ObjectKeyFromObject(mig)
	host, err := r.hostLayout(ctx, vmi, mig.UID)
	if errors.Is(err, errNoLauncherPod) {
		return nil, fmt.Errorf("handler: migration %s: the target launcher is not ready: %w: %w", key, errLauncherUnreachable, err)
	}
	if err != nil {
		return nil, err
	}
	if ready, err := launcherReady(host); !ready {
		if err == nil {
			err = fs.ErrNotExist
		}
		return nil, fmt.Errorf("handler: migration %s: the target launcher is not ready: %w: %w", key, errLauncherUnreachable, err)
	}
	g, err := r.openIn(ctx, vmi, nil, mig.UID, &key)
	if err != nil {
		return nil, err
	}
	// The target QEMU and NBD server listen on their migration sockets here.
	if err := makeMigrationDir(g.dir); err != nil {
		_ = g.close()
		return nil, fmt.Errorf("handler: migration %s: %w", key, err)
	}
	if err := g.machine.Start(ctx); err != nil {
		_ = g.close()
		return nil, err
	}
	r.mu.Lock()
	closed := r.closed
	if !closed {
		r.targets[key] = g
	}
	r.mu.Unlock()
	if closed {
		r.finish(ctx, g)
		return nil, fmt.Errorf("handler: migration %s: the handler is closing", key)
	}
	return g, nil
}

// incomingArrived reports whether the guest has arrived and runs on the
// target: its domain is active, not paused for the incoming migration, and
// no migration job runs on it any more. A domain that runs but still has
// its job comes back with arrived false and its state.
func (r *Reconciler) incomingArrived(ctx context.Context, g *guest) (*domain.DomainState, bool, error) {
	callCtx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	st, reason, err := g.dom.State(callCtx, g.domain)
	if err != nil {
		if errors.Is(err, domain.ErrNotFound) {
			return nil, false, nil // not begun
		}
		return nil, false, err
	}
	if !active(st) || (st == domain.StatePaused && reason == domain.ReasonPausedMigration) {
		return nil, false, nil
	}
	ds := &domain.DomainState{State: st, Reason: reason}
	if m, ok := g.dom.(domain.Migrator); ok {
		js, err := m.JobStats(callCtx, g.domain, domain.JobStatsOptions{})
		switch {
		case errors.Is(err, domain.ErrUnsupported):
			// libvirt gives no statistics of an incoming migration: its
			// job still runs (the finish phase).
			return ds, false, nil
		case err != nil:
			return nil, false, err
		case js.Type.Active():
			return ds, false, nil
		}
	} else if st == domain.StateRunning && reason == domain.ReasonRunningPostcopy {
		return ds, false, nil
	}
	return ds, true, nil
}

// takeOver makes the target's guest the VMI's: one status write moves the
// VMI to this node with the target's interfaces and completes its
// migrationState; the guest then belongs to this handler's VMIs.
func (r *Reconciler) takeOver(ctx context.Context, key types.NamespacedName, vmi *virtv1.VirtualMachineInstance, g *guest, ds *domain.DomainState) error {
	running, err := r.runningDomain(ctx, g)
	if err != nil {
		return err
	}
	now := r.clock.Now()
	// The hotplugged disks came with the guest, held by the attachment
	// pods next to this launcher now.
	hot := carriedHotplug(vmi)
	for i := range hot {
		if hot[i].HotplugVolume, err = r.heldBy(ctx, vmi, g, hot[i].Name, hot[i].HotplugVolume); err != nil {
			return err
		}
	}
	st := Status(vmi, Facts{Domain: ds, Network: g.machine.NetworkPlan, Running: running, Hotplug: hot, Claims: g.claims, Sizes: claimSizes(g)}, now)
	st.NodeName = r.cfg.NodeName
	ms := st.MigrationState.DeepCopy()
	t := metav1.NewTime(now)
	ms.Completed, ms.EndTimestamp = true, &t
	ms.TargetNodeDomainDetected, ms.TargetNodeDomainReadyTimestamp = true, &t
	st.MigrationState = ms
	// A volume migration is done: the guest runs on the new claims.
	st.MigratedVolumes = nil
	conditions.VMI().Remove(&st.Conditions, virtv1.VirtualMachineInstanceVolumesChange)
	if err := r.writeStatus(ctx, vmi, st); err != nil {
		return err
	}
	r.mu.Lock()
	if r.targets[key] == g {
		delete(r.targets, key)
	}
	r.mu.Unlock()
	g.target.Store(nil)
	r.register(g)
	logf.FromContext(ctx).Info("migrated guest taken over", "vmi", g.key, "domain", g.domain, "state", ds.State.String(), "folder", g.folder)
	return nil
}

// abandonTarget undoes what the target's handler prepared for a migration
// that will not come: the incoming domain, DHCP, network and storage.
func (r *Reconciler) abandonTarget(ctx context.Context, key types.NamespacedName, g *guest, why string) error {
	if g == nil {
		return nil
	}
	r.mu.Lock()
	if r.targets[key] == g {
		delete(r.targets, key)
	}
	r.mu.Unlock()
	logf.FromContext(ctx).Info("migration target abandoned: undoing its preparation", "vmi", g.key, "migration", key, "why", why)
	r.finish(ctx, g)
	return r.states.Remove(g.uid)
}

// failIncoming ends the VMI's migrationState as failed when the target
// could not be prepared, unless the source has started the migration (its
// handler then reports how it ends).
func (r *Reconciler) failIncoming(ctx context.Context, vmi *virtv1.VirtualMachineInstance, reason string) error {
	if ms := vmi.Status.MigrationState; ms == nil || ms.StartTimestamp != nil || ms.Completed {
		return nil
	}
	now := metav1.NewTime(r.clock.Now())
	return r.patchMigrationState(ctx, vmi, func(ms *virtv1.VirtualMachineInstanceMigrationState) {
		ms.Completed, ms.Failed, ms.FailureReason, ms.EndTimestamp = true, true, reason, &now
	})
}

// patchMigrationState changes the VMI's status.migrationState with edit (a
// merge patch guarded by the VMI's resourceVersion).
func (r *Reconciler) patchMigrationState(ctx context.Context, vmi *virtv1.VirtualMachineInstance, edit func(*virtv1.VirtualMachineInstanceMigrationState)) error {
	if vmi.Status.MigrationState == nil {
		return fmt.Errorf("handler: VirtualMachineInstance %s/%s: status.migrationState: none to change", vmi.Namespace, vmi.Name)
	}
	st := *vmi.Status.DeepCopy()
	edit(st.MigrationState)
	return r.writeStatus(ctx, vmi, st)
}

func (r *Reconciler) targetGuest(key types.NamespacedName) *guest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.targets[key]
}
