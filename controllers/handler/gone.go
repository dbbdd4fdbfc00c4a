package handler

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/virtkit/virtkit/controllers/handler/state"
)

// gone handles a VMI that is no longer in this node's cache. The apiserver
// has the last word: a VMI that now runs elsewhere keeps its guest; one that
// no longer exists has its guest stopped at once (its grace period was its
// deletion's), including a guest an earlier handler started (state records).
// A launcher's folder goes with its pod (an emptyDir the kubelet removes).
func (r *Reconciler) gone(ctx context.Context, key types.NamespacedName) error {
	if err := r.stopGone(ctx, key); err != nil {
		return err
	}
	r.pods.forget(key)
	return nil
}

func (r *Reconciler) stopGone(ctx context.Context, key types.NamespacedName) error {
	var vmi virtv1.VirtualMachineInstance
	err := r.reader.Get(ctx, key, &vmi)
	switch {
	case err == nil && vmi.Status.NodeName != r.cfg.NodeName:
		return r.elsewhere(ctx, key)
	case err == nil:
		g := r.guest(key)
		if g == nil || g.uid == vmi.UID {
			return nil // a stale cache: the VMI's own event follows
		}
	case !apierrors.IsNotFound(err):
		return err
	}
	log := logf.FromContext(ctx)
	if g := r.guest(key); g != nil {
		log.Info("VMI gone: stopping its guest", "domain", g.domain)
		r.finish(ctx, g)
		r.forget(g)
		return r.states.Remove(g.uid)
	}
	recs, lerr := r.states.List()
	var errs []error
	for _, rec := range recs {
		if rec.Key() == key && (err != nil || rec.UID != vmi.UID) {
			errs = append(errs, r.stopRecorded(ctx, rec))
		}
	}
	return errors.Join(append(errs, lerr)...)
}

// stopRecorded stops a guest an earlier handler started, from its state
// record alone, when its launcher can still be reached, and drops the record.
func (r *Reconciler) stopRecorded(ctx context.Context, rec state.Record) error {
	stub := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: rec.Namespace, Name: rec.Name, UID: rec.UID}}
	g, err := r.open(ctx, stub, &rec)
	switch {
	case err == nil:
		logf.FromContext(ctx).Info("stopping a guest an earlier handler left", "domain", g.domain)
		if aerr := g.machine.Adopt(ctx); aerr != nil {
			logf.FromContext(ctx).V(1).Info("adopting before the stop", "error", aerr.Error())
		}
		r.finish(ctx, g)
	case !errors.Is(err, errLauncherUnreachable):
		return err
	}
	return r.states.Remove(rec.UID)
}

// elsewhere lets go of a VMI that now belongs to another node: the
// connections close, nothing is stopped or undone here.
func (r *Reconciler) elsewhere(ctx context.Context, key types.NamespacedName) error {
	g := r.guest(key)
	if g == nil {
		return nil
	}
	if o := g.outgoing; o != nil {
		// It migrated away (the target's handler took it over, maybe
		// before Run here saw the migration's end): undo what was set up
		// for it in the source pod; its domain went with the migration.
		select {
		case <-o.done:
		case <-time.After(callTimeout):
		}
		logf.FromContext(ctx).Info("VMI migrated to another node: undoing its set-up here", "domain", g.domain, "node", r.cfg.NodeName)
		r.finish(ctx, g)
		r.forget(g)
		return r.states.Remove(g.uid)
	}
	logf.FromContext(ctx).Info("VMI moved to another node: letting its guest go", "domain", g.domain)
	r.forget(g)
	return r.states.Remove(g.uid)
}
