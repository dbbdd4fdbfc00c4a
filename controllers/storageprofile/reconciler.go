package storageprofile

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/stale"
)

// Reasons of the Recognized condition, CDI's.
const (
	ReasonRecognized   = "RecognizedProvisioner"
	ReasonUnrecognized = "UnrecognizedProvisioner"
)

// Reconciler is the StorageProfile controller.
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

// New returns a StorageProfile reconciler.
func New(opts ...Option) *Reconciler {
	r := &Reconciler{clock: clock.RealClock{}}
	for _, o := range opts {
		o(r)
	}
	return r
}

// SetupWithManager registers the reconciler with mgr: it watches
// StorageClasses and the StorageProfiles they own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.client == nil {
		r.client = mgr.GetClient()
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("storageprofile").
		For(&storagev1.StorageClass{}).
		Owns(&cdiv1.StorageProfile{}).
		Complete(r)
}

// Reconcile makes the StorageProfile of a StorageClass and writes its
// status if it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	sc := &storagev1.StorageClass{}
	if err := r.client.Get(ctx, req.NamespacedName, sc); err != nil {
		// A deleted class's profile goes with it (owner reference).
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	sp := &cdiv1.StorageProfile{}
	switch err := r.client.Get(ctx, client.ObjectKey{Name: sc.Name}, sp); {
	case apierrors.IsNotFound(err):
		sp = &cdiv1.StorageProfile{ObjectMeta: metav1.ObjectMeta{Name: sc.Name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "storage.k8s.io/v1", Kind: "StorageClass", Name: sc.Name, UID: sc.UID, Controller: ptr.To(true)}}}}
		if err := r.client.Create(ctx, sp); err != nil {
			return ctrl.Result{}, fmt.Errorf("creating StorageProfile %s: %w", sc.Name, err)
		}
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("reading StorageProfile %s: %w", sc.Name, err)
	}
	next := NextStatus(sp, sc, metav1.NewTime(r.clock.Now()))
	if equality.Semantic.DeepEqual(next, sp.Status) {
		return ctrl.Result{}, nil
	}
	upd := sp.DeepCopy()
	upd.Status = next
	if err := r.client.Status().Update(ctx, upd); err != nil {
		return stale.RetryOn(ctx, fmt.Errorf("writing the status of StorageProfile %s: %w", sc.Name, err))
	}
	return ctrl.Result{}, nil
}

// NextStatus is the status of sp, the profile of sc.
func NextStatus(sp *cdiv1.StorageProfile, sc *storagev1.StorageClass, now metav1.Time) cdiv1.StorageProfileStatus {
	st := *sp.Status.DeepCopy()
	st.StorageClass, st.Provisioner = ptr.To(sc.Name), ptr.To(sc.Provisioner)
	st.CloneStrategy, st.SnapshotClass, st.DataImportCronSourceFormat = sp.Spec.CloneStrategy, sp.Spec.SnapshotClass, sp.Spec.DataImportCronSourceFormat
	known, recognized := Capabilities(sc.Provisioner)
	st.ClaimPropertySets = known
	if len(sp.Spec.ClaimPropertySets) > 0 {
		st.ClaimPropertySets = sp.Spec.ClaimPropertySets
	}
	c := cdiv1.StorageProfileCondition{Type: cdiv1.StorageProfileRecognized, ConditionState: cdiv1.ConditionState{
		Status: corev1.ConditionTrue, Reason: ReasonRecognized}}
	if !recognized {
		c.Status, c.Reason = corev1.ConditionFalse, ReasonUnrecognized
		c.Message = fmt.Sprintf("virtkit does not know provisioner %s: set spec.claimPropertySets", sc.Provisioner)
	}
	for i := range st.Conditions {
		old := &st.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		c.LastTransitionTime, c.LastHeartbeatTime = old.LastTransitionTime, old.LastHeartbeatTime
		if old.Status != c.Status {
			c.LastTransitionTime, c.LastHeartbeatTime = now, now
		}
		*old = c
		return st
	}
	c.LastTransitionTime, c.LastHeartbeatTime = now, now
	st.Conditions = append(st.Conditions, c)
	return st
}
