package cdiresource

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	sdkapi "kubevirt.io/controller-lifecycle-operator-sdk/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/controllers/cdiconfig"
	"github.com/virtkit/virtkit/controllers/events"
	"github.com/virtkit/virtkit/controllers/stale"
)

// Reconciler is the CDI resource controller. Every event (of any CDI
// resource or of the CDIConfig) reconciles the whole: there is one active
// resource and one CDIConfig.
type Reconciler struct {
	client   client.Client
	clock    clock.PassiveClock
	recorder events.Recorder
}

// Option changes how a Reconciler works.
type Option func(*Reconciler)

// WithClient sets the client it reads and writes through; SetupWithManager
// uses the manager's unless set.
func WithClient(c client.Client) Option { return func(r *Reconciler) { r.client = c } }

// WithClock sets the clock of the conditions' times.
func WithClock(c clock.PassiveClock) Option { return func(r *Reconciler) { r.clock = c } }

// WithEventRecorder sets where its events go; SetupWithManager uses the
// manager's unless set.
func WithEventRecorder(rec events.Recorder) Option { return func(r *Reconciler) { r.recorder = rec } }

// New returns a CDI resource reconciler.
func New(opts ...Option) *Reconciler {
	r := &Reconciler{clock: clock.RealClock{}, recorder: events.Discard()}
	for _, o := range opts {
		o(r)
	}
	return r
}

// key is the one request every event maps to.
var key = reconcile.Request{NamespacedName: types.NamespacedName{Name: DefaultName}}

// SetupWithManager registers the reconciler with mgr, watching CDI
// resources and the CDIConfig.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.client == nil {
		r.client = mgr.GetClient()
	}
	r.recorder = events.OrManager(r.recorder, mgr, "cdi-operator")
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{key} })
	return ctrl.NewControllerManagedBy(mgr).
		Named("cdiresource").
		Watches(&cdiv1.CDI{}, one).
		Watches(&cdiv1.CDIConfig{}, one, builder.WithPredicates(configSpecChanged())).
		Complete(r)
}

// configSpecChanged passes the CDIConfig's events that matter here: its
// creation, deletion and spec changes. Its status, which the CDIConfig
// controller writes often, is not read here.
func configSpecChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*cdiv1.CDIConfig)
		n, ok2 := e.ObjectNew.(*cdiv1.CDIConfig)
		return !ok1 || !ok2 || !equality.Semantic.DeepEqual(o.Spec, n.Spec)
	}}
}

// Reconcile makes a CDI resource if there is none, takes configuration
// authority on the active one, writes every resource's status and sets
// the CDIConfig's spec to the active resource's spec.config.
func (r *Reconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	list := &cdiv1.CDIList{}
	if err := r.client.List(ctx, list); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing CDI resources: %w", err)
	}
	cfg := &cdiv1.CDIConfig{}
	switch err := r.client.Get(ctx, client.ObjectKey{Name: cdiconfig.Name}, cfg); {
	case apierrors.IsNotFound(err):
		// The CDIConfig controller makes it; its event brings us back.
		cfg = nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("reading CDIConfig %s: %w", cdiconfig.Name, err)
	}
	active, extra := Active(list.Items)
	if active == nil {
		return ctrl.Result{}, r.create(ctx, cfg)
	}
	if _, ok := active.Annotations[AnnConfigAuthority]; !ok {
		return r.takeAuthority(ctx, active, cfg)
	}
	now := metav1.NewTime(r.clock.Now())
	for _, c := range append([]*cdiv1.CDI{active}, extra...) {
		if err := r.writeStatus(ctx, c, c == active, now); err != nil {
			return stale.RetryOn(ctx, err)
		}
	}
	if cfg == nil {
		return ctrl.Result{}, nil
	}
	want, _ := ConfigSpec(active)
	if equality.Semantic.DeepEqual(cfg.Spec, want) {
		return ctrl.Result{}, nil
	}
	upd := cfg.DeepCopy()
	upd.Spec = want
	if err := r.client.Update(ctx, upd); err != nil {
		return stale.RetryOn(ctx, fmt.Errorf("setting the spec of CDIConfig %s from CDI %s: %w", cdiconfig.Name, active.Name, err))
	}
	return ctrl.Result{}, nil
}

// initialConfig is what a CDI resource made or taken over starts with: the
// CDIConfig's spec when it sets anything, else (for one made) the feature
// gates of CDI's released CDI resource.
func initialConfig(cfg *cdiv1.CDIConfig, made bool) *cdiv1.CDIConfigSpec {
	if cfg != nil && !equality.Semantic.DeepEqual(cfg.Spec, cdiv1.CDIConfigSpec{}) {
		return cfg.Spec.DeepCopy()
	}
	if made {
		return &cdiv1.CDIConfigSpec{FeatureGates: cdiconfig.DefaultFeatureGates()}
	}
	return nil
}

// create makes the CDI resource DefaultName, with configuration authority.
func (r *Reconciler) create(ctx context.Context, cfg *cdiv1.CDIConfig) error {
	c := &cdiv1.CDI{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultName, Annotations: map[string]string{AnnConfigAuthority: ""}},
		Spec:       cdiv1.CDISpec{Config: initialConfig(cfg, true)},
	}
	if err := r.client.Create(ctx, c); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating CDI %s: %w", DefaultName, err)
	}
	return nil
}

// takeAuthority marks c as the CDIConfig's authority, giving it the
// CDIConfig's spec first when it has no spec.config, as CDI's operator
// does.
func (r *Reconciler) takeAuthority(ctx context.Context, c *cdiv1.CDI, cfg *cdiv1.CDIConfig) (ctrl.Result, error) {
	upd := c.DeepCopy()
	if upd.Spec.Config == nil {
		upd.Spec.Config = initialConfig(cfg, false)
	}
	if upd.Annotations == nil {
		upd.Annotations = map[string]string{}
	}
	upd.Annotations[AnnConfigAuthority] = ""
	if err := r.client.Update(ctx, upd); err != nil {
		return stale.RetryOn(ctx, fmt.Errorf("taking configuration authority on CDI %s: %w", c.Name, err))
	}
	return ctrl.Result{}, nil
}

// writeStatus writes c's status if it changed, with an event when its
// phase does.
func (r *Reconciler) writeStatus(ctx context.Context, c *cdiv1.CDI, active bool, now metav1.Time) error {
	st := NextStatus(c.Status.Status, active, now)
	if equality.Semantic.DeepEqual(st, c.Status.Status) {
		return nil
	}
	upd := c.DeepCopy()
	upd.Status.Status = st
	// CDI's CRD has no status subresource: the object is updated whole.
	if err := r.client.Update(ctx, upd); err != nil {
		return fmt.Errorf("writing the status of CDI %s: %w", c.Name, err)
	}
	if c.Status.Phase != st.Phase {
		if st.Phase == sdkapi.PhaseError {
			r.recorder.Eventf(upd, corev1.EventTypeWarning, ReasonConfigError, "%s", MessageUnwanted)
		} else {
			r.recorder.Eventf(upd, corev1.EventTypeNormal, ReasonDeployCompleted, "%s", MessageDeployed)
		}
	}
	return nil
}
