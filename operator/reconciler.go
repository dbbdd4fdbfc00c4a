package operator

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/operator/signer"
	"github.com/virtkit/virtkit/virt/clusterconfig"
)

// Finalizer holds a KubeVirt CR until uninstalling is complete, KubeVirt's.
const Finalizer = "kubevirt.io/foregroundDeleteKubeVirt"

// FieldOwner is the operator's field manager in server-side apply.
const FieldOwner = "virt-operator"

// Reconciler is virt-operator's controller: it installs, keeps in shape
// and uninstalls virtkit for the KubeVirt CR of Settings.Namespace.
type Reconciler struct {
	settings Settings
	client   client.Client
	reader   client.Reader
	clock    clock.PassiveClock
	retry    time.Duration
}

// Option configures a Reconciler.
type Option func(*Reconciler)

// WithClock sets the clock that stamps conditions and decides
// certificate renewals; the default is the real one.
func WithClock(c clock.PassiveClock) Option { return func(r *Reconciler) { r.clock = c } }

// WithRetry sets how soon an uninstall that waits (for objects to go, or
// for workloads that block it) looks again; default 2 s.
func WithRetry(d time.Duration) Option { return func(r *Reconciler) { r.retry = d } }

// New returns the reconciler for s.
func New(s Settings, opts ...Option) (*Reconciler, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	r := &Reconciler{settings: s, clock: clock.RealClock{}, retry: 2 * time.Second}
	for _, o := range opts {
		o(r)
	}
	return r, nil
}

// CacheOptions restricts a manager's cache to what the operator needs: the
// KubeVirt CRs, the certificate requests for its signer of migration
// certificates, and of every other kind only the objects it made (so it
// never holds the cluster's Secrets).
func CacheOptions() cache.Options {
	csr, csrs := signer.CacheByObject()
	return cache.Options{
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{ManagedByLabel: ManagedByValue}),
		ByObject:             map[client.Object]cache.ByObject{&virtv1.KubeVirt{}: {Label: labels.Everything()}, csr: csrs},
	}
}

// SetupWithManager registers the controller with mgr, whose cache must
// have [CacheOptions]. It follows the KubeVirt CRs and every kind the
// operator makes, so that a changed or deleted object is put back.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.client, r.reader = mgr.GetClient(), mgr.GetAPIReader()
	if err := r.setupSigner(mgr); err != nil {
		return err
	}
	// Any CR's event concerns them all: one that goes may leave another
	// alone to be installed.
	toCR := handler.EnqueueRequestsFromMapFunc(r.crs)
	b := ctrl.NewControllerManagedBy(mgr).Named("kubevirt").Watches(&virtv1.KubeVirt{}, toCR)
	managed := builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[ManagedByLabel] == ManagedByValue
	}))
	// Deployments and the DaemonSet whole, for their readiness; the other
	// kinds by their metadata alone.
	b = b.Watches(&appsv1.Deployment{}, toCR, managed).Watches(&appsv1.DaemonSet{}, toCR, managed)
	for _, gvk := range ownedKinds {
		if gvk.Kind == "Deployment" || gvk.Kind == "DaemonSet" {
			continue
		}
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		b = b.WatchesMetadata(m, toCR, managed)
	}
	return b.Complete(r)
}

// setupSigner runs the signer of the nodes' migration certificates
// (operator/signer), with the installation's CA.
func (r *Reconciler) setupSigner(mgr ctrl.Manager) error {
	cs, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("operator: signer: %w", err)
	}
	sg, err := signer.New(signer.Config{Namespace: r.settings.Namespace, CASecret: SecretCA},
		cs.CertificatesV1().CertificateSigningRequests(), mgr.GetAPIReader(),
		signer.WithClock(r.clock), signer.WithLogger(mgr.GetLogger().WithName("signer")))
	if err != nil {
		return err
	}
	return sg.SetupWithManager(mgr)
}

// crs maps any event to every KubeVirt CR the cache holds.
func (r *Reconciler) crs(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &virtv1.KubeVirtList{}
	if err := r.client.List(ctx, list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, kv := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&kv)})
	}
	return out
}

// Reconcile brings one KubeVirt CR's installation a step closer to what
// it asks for, and reports it in its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	kv := &virtv1.KubeVirt{}
	if err := r.client.Get(ctx, req.NamespacedName, kv); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	t := TargetOf(kv, r.settings)
	obs := Observation{Target: t, Version: r.settings.Version, Generation: kv.Generation}
	existing, err := r.existing(ctx, kv)
	if err != nil {
		return ctrl.Result{}, err
	}
	if existing {
		logf.FromContext(ctx).Info("KubeVirt CR ignored: another one is installed, or it is outside the operator's namespace",
			"namespace", r.settings.Namespace)
		obs.Existing = true
		return ctrl.Result{}, r.writeStatus(ctx, kv, obs)
	}
	if kv.DeletionTimestamp != nil {
		return r.uninstall(ctx, kv, obs)
	}
	return r.install(ctx, kv, obs)
}

// existing reports whether kv must be left alone: it is outside the
// operator's namespace, or not the only KubeVirt CR.
func (r *Reconciler) existing(ctx context.Context, kv *virtv1.KubeVirt) (bool, error) {
	if kv.Namespace != r.settings.Namespace {
		return true, nil
	}
	list := &virtv1.KubeVirtList{}
	if err := r.client.List(ctx, list); err != nil {
		return false, fmt.Errorf("listing KubeVirt CRs: %w", err)
	}
	return len(list.Items) > 1, nil
}

func (r *Reconciler) install(ctx context.Context, kv *virtv1.KubeVirt, obs Observation) (ctrl.Result, error) {
	if errs := Validate(kv); len(errs) > 0 {
		obs.Failed = errs.ToAggregate()
		return ctrl.Result{}, r.writeStatus(ctx, kv, obs)
	}
	if !controllerutil.ContainsFinalizer(kv, Finalizer) {
		orig := kv.DeepCopy()
		controllerutil.AddFinalizer(kv, Finalizer)
		if err := r.client.Patch(ctx, kv, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("KubeVirt %s: adding finalizer: %w", client.ObjectKeyFromObject(kv), err)
		}
	}
	now := r.clock.Now()
	p, err := ensurePKI(ctx, r.reader, r.settings, clusterconfig.RotationOf(kv), now)
	if err != nil {
		return ctrl.Result{}, err
	}
	objs, err := Components(kv, r.settings, p.bundle)
	if err != nil {
		obs.Failed = err
		return ctrl.Result{}, r.writeStatus(ctx, kv, obs)
	}
	for _, o := range p.objects {
		mark(o, obs.Target)
	}
	for _, o := range append(p.objects, objs...) {
		if err := r.apply(ctx, o); err != nil {
			obs.Failed = err
			if serr := r.writeStatus(ctx, kv, obs); serr != nil {
				return ctrl.Result{}, errors.Join(err, serr)
			}
			return ctrl.Result{}, err
		}
	}
	obs.Created = true
	if obs.NotReady, err = r.notReady(ctx); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.writeStatus(ctx, kv, obs); err != nil {
		return ctrl.Result{}, err
	}
	// Come back when the first certificate is due.
	return ctrl.Result{RequeueAfter: max(p.next.Sub(r.clock.Now()), time.Second)}, nil
}

// apply server-side applies o, taking over any field someone else changed.
func (r *Reconciler) apply(ctx context.Context, o client.Object) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return fmt.Errorf("%s: %w", describe(o), err)
	}
	delete(m, "status")
	unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(m, "spec", "template", "metadata", "creationTimestamp")
	u := &unstructured.Unstructured{Object: m}
	if err := r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s: %w", describe(o), err)
	}
	return nil
}

// notReady names the workloads whose pods are not all up to date and
// ready; a workload not yet in the cache is not ready.
func (r *Reconciler) notReady(ctx context.Context) ([]string, error) {
	ns := r.settings.Namespace
	var out []string
	for _, name := range []string{deploy.APIName, deploy.ControllerName, deploy.ExportProxyName} {
		d := &appsv1.Deployment{}
		if err := r.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			if apierrors.IsNotFound(err) {
				out = append(out, "Deployment "+name)
				continue
			}
			return nil, err
		}
		if !DeploymentReady(d) {
			out = append(out, "Deployment "+name)
		}
	}
	ds := &appsv1.DaemonSet{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: deploy.HandlerName}, ds); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
		out = append(out, "DaemonSet "+deploy.HandlerName)
	} else if !DaemonSetReady(ds) {
		out = append(out, "DaemonSet "+deploy.HandlerName)
	}
	return out, nil
}

// DeploymentReady reports whether d's rollout is done: its controller has
// seen its latest spec, every replica runs it, no pod of an earlier spec
// is left, and one of the new is available. An old pod still serving
// while the new one waits (for a node, or for the old one's port) is a
// rollout in progress, not a ready Deployment.
func DeploymentReady(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas >= want && s.Replicas == s.UpdatedReplicas && s.AvailableReplicas >= 1
}

// DaemonSetReady reports whether ds's controller has seen its latest spec
// and every node it should run on has an up-to-date, ready pod (and there
// is at least one such node).
func DaemonSetReady(ds *appsv1.DaemonSet) bool {
	s := ds.Status
	return s.ObservedGeneration >= ds.Generation && s.DesiredNumberScheduled > 0 &&
		s.UpdatedNumberScheduled == s.DesiredNumberScheduled && s.NumberReady == s.DesiredNumberScheduled
}

// writeStatus writes kv's next status when it changed.
func (r *Reconciler) writeStatus(ctx context.Context, kv *virtv1.KubeVirt, obs Observation) error {
	next := Status(kv.Status, obs, metav1.NewTime(r.clock.Now()))
	if equality.Semantic.DeepEqual(next, kv.Status) {
		return nil
	}
	upd := kv.DeepCopy()
	upd.Status = next
	if err := r.client.Status().Update(ctx, upd); err != nil {
		return fmt.Errorf("KubeVirt %s: status: %w", client.ObjectKeyFromObject(kv), err)
	}
	*kv = *upd
	return nil
}
