package cdiconfig

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/controllers/events"
	"github.com/virtkit/virtkit/controllers/stale"
)

// ReasonInvalidConfig is the Warning event of a spec value left out.
const ReasonInvalidConfig = "InvalidConfig"

// Reconciler is the CDIConfig controller.
type Reconciler struct {
	client   client.Client
	defaults Defaults
	recorder events.Recorder
}

// Option changes how a Reconciler works.
type Option func(*Reconciler)

// WithClient sets the client it reads and writes through; SetupWithManager
// uses the manager's unless set.
func WithClient(c client.Client) Option { return func(r *Reconciler) { r.client = c } }

// WithDefaults sets what the status says where the spec is silent.
func WithDefaults(d Defaults) Option { return func(r *Reconciler) { r.defaults = d } }

// WithEventRecorder sets where the Warning events of invalid values go;
// SetupWithManager uses the manager's unless set.
func WithEventRecorder(rec events.Recorder) Option { return func(r *Reconciler) { r.recorder = rec } }

// New returns a CDIConfig reconciler.
func New(opts ...Option) *Reconciler {
	r := &Reconciler{recorder: events.Discard()}
	for _, o := range opts {
		o(r)
	}
	return r
}

// SetupWithManager registers the reconciler with mgr, and makes the
// CDIConfig "config" when the manager starts if there is none (as CDI's
// operator does).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.client == nil {
		r.client = mgr.GetClient()
	}
	r.recorder = events.OrManager(r.recorder, mgr, "cdiconfig-controller")
	if err := mgr.Add(manager.RunnableFunc(r.ensure)); err != nil {
		return err
	}
	// A StorageClass made or deleted may change the scratch space class.
	config := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: Name}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("cdiconfig").
		For(&cdiv1.CDIConfig{}).
		Watches(&storagev1.StorageClass{}, config).
		Complete(r)
}

// ensure makes the CDIConfig "config" unless it exists, with
// DefaultFeatureGates as CDI's released CDI resource has them.
func (r *Reconciler) ensure(ctx context.Context) error {
	cfg := &cdiv1.CDIConfig{ObjectMeta: metav1.ObjectMeta{Name: Name}, Spec: cdiv1.CDIConfigSpec{FeatureGates: DefaultFeatureGates()}}
	if err := r.client.Create(ctx, cfg); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating CDIConfig %s: %w", Name, err)
	}
	return nil
}

// Reconcile writes the status of the CDIConfig "config" if it changed;
// any other CDIConfig is left alone.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if req.Name != Name {
		return ctrl.Result{}, nil
	}
	cfg := &cdiv1.CDIConfig{}
	if err := r.client.Get(ctx, req.NamespacedName, cfg); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	classes := &storagev1.StorageClassList{}
	if err := r.client.List(ctx, classes); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing StorageClasses: %w", err)
	}
	names := make([]string, 0, len(classes.Items))
	for _, c := range classes.Items {
		names = append(names, c.Name)
	}
	st, errs := NextStatus(cfg, r.defaults, names)
	if equality.Semantic.DeepEqual(st, cfg.Status) {
		return ctrl.Result{}, nil
	}
	upd := cfg.DeepCopy()
	upd.Status = st
	// CDI's CRD has no status subresource: the object is updated whole.
	if err := r.client.Update(ctx, upd); err != nil {
		return stale.RetryOn(ctx, fmt.Errorf("writing the status of CDIConfig %s: %w", Name, err))
	}
	if err := errors.Join(errs...); err != nil {
		r.recorder.Eventf(upd, corev1.EventTypeWarning, ReasonInvalidConfig, "left out: %v", err)
	}
	return ctrl.Result{}, nil
}
