package datasource

import (
	"context"
	"fmt"

	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/controllers/stale"
	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virt/storage/dvspec"
	"github.com/virtkit/virtkit/virt/storage/snapshot"
)

// Reasons of the Ready condition, as CDI's.
const (
	ReasonReady        = "Ready"
	ReasonNotFound     = "NotFound"
	ReasonNotReady     = "NotReady"
	ReasonNotSupported = "NotSupported"
)

// Reconciler is the DataSource controller.
type Reconciler struct {
	client client.Client
	clock  clock.PassiveClock
}

// Option changes how a Reconciler works.
type Option func(*Reconciler)

// WithClient sets the client it reads and writes through; SetupWithManager
// uses the manager's unless set.
func WithClient(c client.Client) Option { return func(r *Reconciler) { r.client = c } }

// WithClock sets the clock of condition timestamps.
func WithClock(c clock.PassiveClock) Option { return func(r *Reconciler) { r.clock = c } }

// New returns a DataSource reconciler.
func New(opts ...Option) *Reconciler {
	r := &Reconciler{clock: clock.RealClock{}}
	for _, o := range opts {
		o(r)
	}
	return r
}

// SetupWithManager registers the reconciler with mgr: it watches
// DataSources, and the claims, DataVolumes and (where the cluster serves
// them) VolumeSnapshots they may name.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.client == nil {
		r.client = mgr.GetClient()
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("datasource").
		For(&cdiv1.DataSource{}).
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(r.naming)).
		Watches(&cdiv1.DataVolume{}, handler.EnqueueRequestsFromMapFunc(r.naming))
	if served, _ := scheme.Served(mgr.GetRESTMapper(), &volumesnapshotv1.VolumeSnapshot{}); served {
		b = b.Watches(&volumesnapshotv1.VolumeSnapshot{}, handler.EnqueueRequestsFromMapFunc(r.naming))
	}
	return b.Complete(r)
}

// naming maps a claim, a DataVolume (of a claim) or a VolumeSnapshot to the
// DataSources of its namespace that name it.
func (r *Reconciler) naming(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &cdiv1.DataSourceList{}
	if err := r.client.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	_, isSnapshot := obj.(*volumesnapshotv1.VolumeSnapshot)
	var out []reconcile.Request
	for i := range list.Items {
		src, err := dvspec.DataSourceSource(&list.Items[i])
		if err != nil {
			continue
		}
		if (!isSnapshot && src.Claim != nil && src.Claim.Namespace == obj.GetNamespace() && src.Claim.Name == obj.GetName()) ||
			(isSnapshot && src.Snapshot != nil && src.Snapshot.Namespace == obj.GetNamespace() && src.Snapshot.Name == obj.GetName()) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

// Reconcile writes a DataSource's status if it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ds := &cdiv1.DataSource{}
	if err := r.client.Get(ctx, req.NamespacedName, ds); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	status, reason, msg, err := r.readiness(ctx, ds)
	if err != nil {
		return ctrl.Result{}, err
	}
	next := ds.Status.DeepCopy()
	next.Source = ds.Spec.Source
	next.Conditions = setReady(next.Conditions, status, reason, msg, metav1.NewTime(r.clock.Now()))
	if equality.Semantic.DeepEqual(*next, ds.Status) {
		return ctrl.Result{}, nil
	}
	upd := ds.DeepCopy()
	upd.Status = *next
	if err := r.client.Status().Update(ctx, upd); err != nil {
		return stale.RetryOn(ctx, fmt.Errorf("writing the status of DataSource %s: %w", req.NamespacedName, err))
	}
	return ctrl.Result{}, nil
}

// readiness says whether ds can be cloned from now.
func (r *Reconciler) readiness(ctx context.Context, ds *cdiv1.DataSource) (corev1.ConditionStatus, string, string, error) {
	src, err := dvspec.DataSourceSource(ds)
	if err != nil {
		return corev1.ConditionFalse, ReasonNotSupported, err.Error(), nil
	}
	if s := src.Snapshot; s != nil {
		key := client.ObjectKey{Namespace: s.Namespace, Name: s.Name}
		snap := &volumesnapshotv1.VolumeSnapshot{}
		switch err := r.client.Get(ctx, key, snap); {
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			return corev1.ConditionFalse, ReasonNotFound, fmt.Sprintf("snapshot %s not found", key), nil
		case err != nil:
			return "", "", "", fmt.Errorf("reading snapshot %s: %w", key, err)
		case !snapshot.VolumeSnapshotReady(snap):
			return corev1.ConditionFalse, ReasonNotReady, fmt.Sprintf("snapshot %s is not ready to use", key), nil
		}
		return corev1.ConditionTrue, ReasonReady, fmt.Sprintf("snapshot %s is ready to be restored", key), nil
	}
	key := client.ObjectKey{Namespace: src.Claim.Namespace, Name: src.Claim.Name}
	pvc := &corev1.PersistentVolumeClaim{}
	switch err := r.client.Get(ctx, key, pvc); {
	case apierrors.IsNotFound(err):
		return corev1.ConditionFalse, ReasonNotFound, fmt.Sprintf("claim %s not found", key), nil
	case err != nil:
		return "", "", "", fmt.Errorf("reading claim %s: %w", key, err)
	case pvc.Status.Phase != corev1.ClaimBound:
		return corev1.ConditionFalse, ReasonNotReady, fmt.Sprintf("claim %s is not bound", key), nil
	}
	dv := &cdiv1.DataVolume{}
	switch err := r.client.Get(ctx, key, dv); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return "", "", "", fmt.Errorf("reading DataVolume %s: %w", key, err)
	case dv.Status.Phase != cdiv1.Succeeded:
		return corev1.ConditionFalse, ReasonNotReady, fmt.Sprintf("DataVolume %s is %s", key, dv.Status.Phase), nil
	}
	return corev1.ConditionTrue, ReasonReady, fmt.Sprintf("claim %s is ready to be cloned", key), nil
}

// setReady sets the Ready condition, moving its transition time only when
// its status changes.
func setReady(cs []cdiv1.DataSourceCondition, s corev1.ConditionStatus, reason, msg string, now metav1.Time) []cdiv1.DataSourceCondition {
	for i := range cs {
		c := &cs[i]
		if c.Type != cdiv1.DataSourceReady {
			continue
		}
		if c.Status != s {
			c.LastTransitionTime, c.LastHeartbeatTime = now, now
		} else if c.Reason != reason || c.Message != msg {
			c.LastHeartbeatTime = now
		}
		c.Status, c.Reason, c.Message = s, reason, msg
		return cs
	}
	return append(cs, cdiv1.DataSourceCondition{Type: cdiv1.DataSourceReady,
		ConditionState: cdiv1.ConditionState{Status: s, Reason: reason, Message: msg, LastTransitionTime: now, LastHeartbeatTime: now}})
}
