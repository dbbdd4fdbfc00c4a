package handler

import (
	"context"
	"errors"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/storage"
)

// sync follows a guest the handler drives: it stops it gracefully when its
// VMI is deleted, ends the VMI when the guest or its launcher ended, and
// otherwise reports the domain's state in the VMI's status.
func (r *Reconciler) sync(ctx context.Context, vmi *virtv1.VirtualMachineInstance, g *guest) (ctrl.Result, error) {
	if g.ending == nil {
		if res, handled, err := r.syncOutgoing(ctx, vmi, g); handled || err != nil {
			return res, err
		}
	}
	var ds *domain.DomainState
	if g.ending == nil {
		var res ctrl.Result
		var err error
		ds, res, err = r.observe(ctx, vmi, g)
		if ds == nil && g.ending == nil {
			return res, err
		}
		if g.ending == nil && vmi.DeletionTimestamp != nil && active(ds.State) {
			if ds, res, err = r.shutdown(ctx, vmi, g, ds); ds == nil && g.ending == nil {
				return res, err
			}
		}
		if g.ending == nil {
			g.ending = DomainEnding(vmi, ds)
		}
		if g.ending == nil && vmi.DeletionTimestamp != nil && !active(ds.State) {
			// Off for a reason that decides no phase (never started,
			// unknown): the deletion ends it.
			g.ending = &Ending{Phase: virtv1.Succeeded, Message: "the guest is off (" + domain.ReasonString(ds.State, ds.Reason) + ")"}
		}
	}
	if g.ending != nil {
		return r.end(ctx, vmi, g)
	}
	if vmi.DeletionTimestamp != nil {
		return ctrl.Result{}, nil // shutting down: nothing new to report
	}
	return r.report(ctx, vmi, g, ds)
}

// observe reads the domain's state. When the launcher does not answer it
// sets g.ending from the launcher's result (or its loss) and returns nil, or
// returns nil and when to look again.
func (r *Reconciler) observe(ctx context.Context, vmi *virtv1.VirtualMachineInstance, g *guest) (*domain.DomainState, ctrl.Result, error) {
	callCtx, cancel := context.WithTimeout(ctx, callTimeout)
	st, reason, err := g.dom.State(callCtx, g.domain)
	cancel()
	switch {
	case err == nil:
		r.setLost(g.uid, false)
		return &domain.DomainState{State: st, Reason: reason}, ctrl.Result{}, nil
	case errors.Is(err, domain.ErrNotFound):
		// The handler started this domain: without it, the guest is gone.
		r.setLost(g.uid, false)
		g.ending = &Ending{Phase: virtv1.Failed, Reason: ReasonDomainNotFound, Message: "the guest's domain is gone from the launcher's libvirt"}
		return nil, ctrl.Result{}, nil
	}
	logf.FromContext(ctx).V(1).Info("launcher not answering", "error", err.Error())
	e, res := r.launcherEnding(vmi, &g.host)
	g.ending = e
	return nil, res, nil
}

// shutdown stops the guest of a deleted VMI: an ACPI shutdown first, then,
// once the VMI's grace period has passed, destroy. It returns the domain's
// state after a destroy, or nil and when to look again.
func (r *Reconciler) shutdown(ctx context.Context, vmi *virtv1.VirtualMachineInstance, g *guest, ds *domain.DomainState) (*domain.DomainState, ctrl.Result, error) {
	log := logf.FromContext(ctx)
	now := r.clock.Now()
	step := NextShutdownStep(vmi, g.shutdownAt, now)
	if step.RequestACPI {
		g.shutdownAt = now
		if ds.State == domain.StatePaused {
			log.Info("the guest is paused: it cannot act on the power button", "grace", GracePeriod(vmi))
		} else if err := g.dom.Shutdown(ctx, g.domain); err != nil && !errors.Is(err, domain.ErrInvalidState) {
			log.Info("ACPI shutdown request failed", "error", err.Error())
		}
		log.Info("VMI deleted: shutting the guest down", "grace", GracePeriod(vmi))
	}
	if !step.Destroy {
		// The domain's stop event comes sooner when the guest obeys.
		return nil, ctrl.Result{RequeueAfter: step.Wait}, nil
	}
	log.Info("destroying the guest", "afterGrace", GracePeriod(vmi))
	if err := g.dom.Destroy(ctx, g.domain); err != nil && !errors.Is(err, domain.ErrInvalidState) && !errors.Is(err, domain.ErrNotFound) {
		return nil, ctrl.Result{}, err
	}
	return r.observe(ctx, vmi, g)
}

// end finishes an ended guest (every start step undone) and writes the VMI's
// final status; g stays registered, with its ending, until the write worked.
func (r *Reconciler) end(ctx context.Context, vmi *virtv1.VirtualMachineInstance, g *guest) (ctrl.Result, error) {
	r.finish(ctx, g)
	st := Status(vmi, Facts{Ending: g.ending, Network: g.machine.NetworkPlan}, r.clock.Now())
	if err := r.writeStatus(ctx, vmi, st); err != nil {
		return ctrl.Result{}, err
	}
	logf.FromContext(ctx).Info("VMI ended", "phase", st.Phase, "reason", g.ending.Reason, "message", g.ending.Message)
	r.forget(g)
	return ctrl.Result{}, r.states.Remove(g.uid)
}

// report writes the status the running domain gives the VMI, if it changed.
func (r *Reconciler) report(ctx context.Context, vmi *virtv1.VirtualMachineInstance, g *guest, ds *domain.DomainState) (ctrl.Result, error) {
	running, err := r.runningDomain(ctx, g)
	if err != nil {
		return ctrl.Result{}, err
	}
	resized, memoryFailed, err := r.resize(ctx, vmi, g, running)
	if err != nil {
		return ctrl.Result{}, err
	}
	if resized {
		if running, err = r.runningDomain(ctx, g); err != nil {
			return ctrl.Result{}, err
		}
	}
	hot, res, err := r.hotplug(ctx, vmi, g)
	if err != nil {
		return ctrl.Result{}, err
	}
	// A NIC that failed to plug fails the reconcile (retried), after the
	// status says what is plugged.
	nicRes, nicErr := r.hotplugNICs(ctx, vmi, g)
	if nicRes.RequeueAfter > 0 && (res.RequeueAfter == 0 || nicRes.RequeueAfter < res.RequeueAfter) {
		res.RequeueAfter = nicRes.RequeueAfter
	}
	st := Status(vmi, Facts{Domain: ds, Network: g.machine.NetworkPlan, Running: running, Hotplug: hot, Claims: g.claims, Sizes: claimSizes(g),
		Agent: agentFacts(ctx, vmi, g), Frozen: g.frozen.Load(), MemoryHotplugFailed: memoryFailed}, r.clock.Now())
	if err := r.writeStatus(ctx, vmi, st); err != nil {
		return res, err
	}
	if nicErr != nil {
		return res, nicErr
	}
	if !g.startedAt.IsZero() && vmi.Status.Phase == virtv1.Running {
		r.starts.ObserveStart(StageReport, r.clock.Since(g.startedAt))
		g.startedAt = time.Time{}
	}
	return res, nil
}

// syncFailed reports a failed start as KubeVirt does: Synchronized=False
// with the error (worded by userMessage), written only when the message
// changed.
func (r *Reconciler) syncFailed(ctx context.Context, vmi *virtv1.VirtualMachineInstance, cause error) error {
	st := *vmi.Status.DeepCopy()
	conditions.VMI().Set(&st.Conditions, virtv1.VirtualMachineInstanceCondition{
		Type:    virtv1.VirtualMachineInstanceSynchronized,
		Status:  k8sv1.ConditionFalse,
		Reason:  ReasonSynchronizationFailed,
		Message: userMessage(cause),
	}, metav1.NewTime(r.clock.Now().Truncate(time.Second)))
	return r.writeStatus(ctx, vmi, st)
}

// claimSizes are the sizes of g's claim images, by volume, from the plan it
// was started (or adopted) with.
func claimSizes(g *guest) map[string]int64 {
	out := map[string]int64{}
	for vol, p := range g.machine.StoragePlan {
		if (p.Kind == storage.KindPersistentVolumeClaim || p.Kind == storage.KindDataVolume) && !p.Hotpluggable {
			out[vol] = p.CapacityBytes
		}
	}
	return out
}
