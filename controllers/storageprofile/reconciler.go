package storageprofile

import (
	"context"
	"fmt"

	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
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
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/controllers/stale"
	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virt/storage/snapshot"
)

// Reasons of the Recognized condition, CDI's.
const (
	ReasonRecognized   = "RecognizedProvisioner"
	ReasonUnrecognized = "UnrecognizedProvisioner"
)

// AnnCloneStrategy on a StorageClass names the clone strategy of its
// profile when the profile's spec does not: copy, snapshot or csi-clone
// (CDI's annotation).
const AnnCloneStrategy = "cdi.kubevirt.io/clone-strategy"

// Reconciler is the StorageProfile controller.
type Reconciler struct {
	client client.Client
	clock  clock.PassiveClock
	// snapshotClasses: the cluster serves VolumeSnapshotClasses.
	snapshotClasses bool
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
	b := ctrl.NewControllerManagedBy(mgr).
		Named("storageprofile").
		For(&storagev1.StorageClass{}).
		Owns(&cdiv1.StorageProfile{})
	if served, _ := scheme.Served(mgr.GetRESTMapper(), &volumesnapshotv1.VolumeSnapshotClass{}); served {
		// A snapshot class that comes or goes changes the profiles of
		// its driver's StorageClasses.
		r.snapshotClasses = true
		b = b.Watches(&volumesnapshotv1.VolumeSnapshotClass{}, handler.EnqueueRequestsFromMapFunc(r.classesOfDriver))
	}
	return b.Complete(r)
}

// classesOfDriver are the StorageClasses whose provisioner is the driver of
// the VolumeSnapshotClass obj.
func (r *Reconciler) classesOfDriver(ctx context.Context, obj client.Object) []reconcile.Request {
	vsc, ok := obj.(*volumesnapshotv1.VolumeSnapshotClass)
	if !ok {
		return nil
	}
	var l storagev1.StorageClassList
	if err := r.client.List(ctx, &l); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, sc := range l.Items {
		if sc.Provisioner == vsc.Driver {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Name: sc.Name}})
		}
	}
	return reqs
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
	snapClass, err := r.snapshotClass(ctx, sp, sc)
	if err != nil {
		return ctrl.Result{}, err
	}
	next := NextStatus(sp, sc, snapClass, metav1.NewTime(r.clock.Now()))
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

// snapshotClass is the VolumeSnapshotClass that snapshots sc's volumes:
// the profile's spec's, else the one KubeVirt would pick for the class
// (snapshot.SnapshotClassFor); "" when there is none.
func (r *Reconciler) snapshotClass(ctx context.Context, sp *cdiv1.StorageProfile, sc *storagev1.StorageClass) (string, error) {
	if sp.Spec.SnapshotClass != nil {
		return *sp.Spec.SnapshotClass, nil
	}
	if !r.snapshotClasses {
		return "", nil
	}
	var l volumesnapshotv1.VolumeSnapshotClassList
	if err := r.client.List(ctx, &l); err != nil {
		return "", fmt.Errorf("listing VolumeSnapshotClasses: %w", err)
	}
	name, err := snapshot.SnapshotClassFor(sc.Name, snapshot.Facts{StorageClasses: map[string]*storagev1.StorageClass{sc.Name: sc}, SnapshotClasses: l.Items})
	if err != nil {
		// None, or several and none the default: no snapshot clones.
		return "", nil
	}
	return name, nil
}

// NextStatus is the status of sp, the profile of sc, whose volumes the
// VolumeSnapshotClass snapClass snapshots ("" none).
func NextStatus(sp *cdiv1.StorageProfile, sc *storagev1.StorageClass, snapClass string, now metav1.Time) cdiv1.StorageProfileStatus {
	st := *sp.Status.DeepCopy()
	st.StorageClass, st.Provisioner = ptr.To(sc.Name), ptr.To(sc.Provisioner)
	st.SnapshotClass, st.DataImportCronSourceFormat = nil, sp.Spec.DataImportCronSourceFormat
	if snapClass != "" {
		st.SnapshotClass = ptr.To(snapClass)
	}
	st.CloneStrategy = ptr.To(CloneStrategy(sp.Spec.CloneStrategy, sc, snapClass))
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
