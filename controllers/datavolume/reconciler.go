package datavolume

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/controllers/cdiresource"
	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/controllers/events"
	"github.com/virtkit/virtkit/controllers/stale"
	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virt/storage/dvspec"
	"github.com/virtkit/virtkit/virt/storage/upload"
)

// CloneRetryInterval is how often a clone waiting for its source looks
// again.
const CloneRetryInterval = 5 * time.Second

// SmartCloneInterval is how often a clone the storage makes looks again at
// what it waits for in the source's namespace (a snapshot, a claim) or at
// the volume it hands over.
const SmartCloneInterval = time.Second

// ProgressInterval is how often an import in progress has its progress
// read.
const ProgressInterval = 2 * time.Second

// Reconciler is the DataVolume controller. Build it with New, then call
// SetupWithManager, or call Reconcile directly with WithClient set.
type Reconciler struct {
	client client.Client
	// apiReader reads what the cache does not hold (upload Secrets).
	apiReader client.Reader
	clock     clock.PassiveClock
	recorder  EventRecorder
	progress  ProgressReader
	pod       PodOptions
	workers   int
	versions  stale.Guard
	// namespace holds the import proxy's CA ConfigMap (WithNamespace).
	namespace string
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// New returns a DataVolume reconciler with opts applied.
func New(opts ...Option) *Reconciler {
	r := defaults()
	for _, o := range opts {
		o(&r)
	}
	return &r
}

// SetupWithManager registers the reconciler with mgr: it watches
// DataVolumes and the claims, importer pods and (where the cluster serves
// them) clone snapshots they control.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.pod.Image == "" {
		return errors.New("datavolume: PodOptions.Image: required")
	}
	if r.client == nil {
		r.client = mgr.GetClient()
	}
	if r.apiReader == nil {
		r.apiReader = mgr.GetAPIReader()
	}
	r.recorder = events.OrManager(r.recorder, mgr, "datavolume-controller")
	if err := r.setupClaimUploads(mgr); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("datavolume").
		For(&cdiv1.DataVolume{}).
		Owns(&corev1.PersistentVolumeClaim{}).
		Owns(&corev1.Pod{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.workers})
	if served, _ := scheme.Served(mgr.GetRESTMapper(), &volumesnapshotv1.VolumeSnapshot{}); served {
		// A snapshot clone's snapshot, ready or failed.
		b = b.Owns(&volumesnapshotv1.VolumeSnapshot{})
	}
	return b.Complete(r)
}

// Reconcile makes a DataVolume's claim, runs its importer pod until the
// claim is filled, and writes the status if, and only if, it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	dv := &cdiv1.DataVolume{}
	if err := r.client.Get(ctx, req.NamespacedName, dv); err != nil {
		if apierrors.IsNotFound(err) {
			r.versions.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.versions.Stale(req.NamespacedName, dv.ResourceVersion) {
		return ctrl.Result{RequeueAfter: stale.RetryAfter}, nil
	}
	if dv.DeletionTimestamp != nil {
		// The claim and the pod go with it (owner references); a clone's
		// source pod in another namespace is deleted here.
		return ctrl.Result{}, r.release(ctx, dv)
	}
	var o Observed
	src, ferr := dvspec.SourceOf(dv)
	o.Source = src
	if ferr != nil {
		o.Invalid = fmt.Errorf("DataVolume %s: %w", req.NamespacedName, ferr)
		return r.finish(ctx, dv, o, reconcile.TerminalError(o.Invalid))
	}
	if src.Ref != nil && !(dv.Status.Phase == cdiv1.Succeeded || dv.Status.Phase == cdiv1.Failed) {
		// A DataSource names the claim or snapshot to clone; it may come
		// or change.
		switch resolved, blocked, err := r.resolve(ctx, src); {
		case err != nil:
			o.Invalid = fmt.Errorf("DataVolume %s: spec.sourceRef: %w", req.NamespacedName, err)
			return r.finish(ctx, dv, o, reconcile.TerminalError(o.Invalid))
		case blocked != "":
			o.Blocked, o.BlockedReason = blocked, ReasonCloneNoSource
			return r.finishThenAgain(ctx, dv, o, CloneRetryInterval)
		default:
			src, o.Source = resolved, resolved
		}
	}
	if src.Snapshot != nil && dvspec.NeedsSourceSize(dv, src) {
		// The restored claim takes the snapshot's restore size.
		snap, blocked, err := r.sourceSnapshot(ctx, src)
		if err != nil {
			return ctrl.Result{}, err
		}
		if blocked != "" {
			o.Blocked, o.BlockedReason = blocked, ReasonCloneNoSource
			return r.finishThenAgain(ctx, dv, o, CloneRetryInterval)
		}
		src.ClaimSize = snap.Status.RestoreSize
	}
	if src.Claim != nil && dvspec.NeedsSourceSize(dv, src) {
		// The clone takes its source's size, as CDI infers it.
		key := client.ObjectKey{Namespace: src.Claim.Namespace, Name: src.Claim.Name}
		source := &corev1.PersistentVolumeClaim{}
		switch err := r.client.Get(ctx, key, source); {
		case apierrors.IsNotFound(err):
			o.Blocked, o.BlockedReason = fmt.Sprintf("source claim %s not found", key), ReasonCloneNoSource
			return r.finishThenAgain(ctx, dv, o, CloneRetryInterval)
		case err != nil:
			return ctrl.Result{}, fmt.Errorf("reading source claim %s: %w", key, err)
		}
		size := resource.NewQuantity(dvspec.ClaimCapacity(source), resource.BinarySI)
		src.ClaimSize = size
	}
	class, err := r.storageClass(ctx, dv)
	if err != nil {
		return ctrl.Result{}, err
	}
	po, err := r.podOptions(ctx, class)
	if err != nil {
		return ctrl.Result{}, err
	}
	profile, err := r.profile(ctx, class)
	if err != nil {
		return ctrl.Result{}, err
	}
	var sets []cdiv1.ClaimPropertySet
	if profile != nil {
		sets = profile.ClaimPropertySets
	}
	want, ferr := dvspec.Claim(dv, src, po.overhead(), sets)
	if ferr != nil {
		o.Invalid = fmt.Errorf("DataVolume %s: %w", req.NamespacedName, ferr)
		return r.finish(ctx, dv, o, reconcile.TerminalError(o.Invalid))
	}

	claim := &corev1.PersistentVolumeClaim{}
	switch err := r.client.Get(ctx, req.NamespacedName, claim); {
	case apierrors.IsNotFound(err):
		if dv.Status.Phase == cdiv1.Succeeded || dv.Status.Phase == cdiv1.Failed {
			// Its claim was deleted after the fact: nothing to redo.
			return r.finish(ctx, dv, o, nil)
		}
		if _, ok := dv.Annotations[dvspec.AnnPrePopulated]; ok {
			// Someone else makes and fills it; claims not its own are
			// not watched.
			return r.finishThenAgain(ctx, dv, o, CloneRetryInterval)
		}
		if src.IsClone() {
			// A clone's claim may be made by the storage itself, as the
			// CDI resource's override or else the profile says.
			override, err := cdiresource.CloneStrategyOverride(ctx, r.client)
			if err != nil {
				return ctrl.Result{}, err
			}
			if want, err = r.smartClaim(ctx, dv, src, want, class, withCloneStrategy(profile, override), &o); err != nil {
				return ctrl.Result{}, err
			}
			if want == nil {
				again := CloneRetryInterval
				if o.Preparing != "" {
					again = SmartCloneInterval
				}
				return r.finishThenAgain(ctx, dv, o, again)
			}
		}
		if err := r.client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return ctrl.Result{}, fmt.Errorf("creating the claim of DataVolume %s: %w", req.NamespacedName, err)
		}
		o.Claim = want
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("reading the claim of DataVolume %s: %w", req.NamespacedName, err)
	default:
		o.Claim = claim
		o.Foreign = !metav1.IsControlledBy(claim, dv)
	}
	_, prePopulated := dv.Annotations[dvspec.AnnPrePopulated]
	if o.Foreign && (dv.Annotations[dvspec.AnnAllowClaimAdoption] == "true" || prePopulated) && metav1.GetControllerOf(o.Claim) == nil {
		// As CDI: the DataVolume takes the claim over as it is, filled.
		if err := r.adopt(ctx, dv, o.Claim); err != nil {
			return ctrl.Result{}, err
		}
		o.Foreign = false
	}
	if o.Foreign {
		return r.finish(ctx, dv, o, nil)
	}
	o.Populated = o.Claim.Annotations[dvspec.AnnPopulatedFor] == dv.Name

	pod := &corev1.Pod{}
	switch err := r.client.Get(ctx, client.ObjectKey{Namespace: dv.Namespace, Name: PodName(dv, src)}, pod); {
	case apierrors.IsNotFound(err):
		pod = nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("reading the importer pod of DataVolume %s: %w", req.NamespacedName, err)
	case !metav1.IsControlledBy(pod, dv):
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("DataVolume %s: pod %s exists and is not its importer", req.NamespacedName, pod.Name))
	}
	o.Pod = pod
	cross := src.CrossNamespace(dv.Namespace)
	if pod != nil && cross && !o.Populated && dv.Status.Phase != cdiv1.Failed {
		sp, err := r.cloneSource(ctx, dv, src, pod, po)
		if err != nil {
			return ctrl.Result{}, err
		}
		if sourceFailed(sp) {
			// Its words are the DataVolume's failure.
			o.Pod, o.Source = sp, src
			return r.finishAndDelete(ctx, dv, o)
		}
	}
	if pod != nil {
		// As CDI: the claim tells the pod's phase and readiness, which
		// KubeVirt's virtctl image-upload waits on.
		if err := r.annotateClaim(ctx, o.Claim, map[string]string{
			dvspec.AnnPodPhase: string(mirroredPhase(pod)), dvspec.AnnPodReady: strconv.FormatBool(conditions.Pod().IsTrue(pod.Status.Conditions, corev1.PodReady))}); err != nil {
			return ctrl.Result{}, err
		}
	}

	// A claim of a WaitForFirstConsumer class binds only once a pod uses
	// it. As CDI's, the DataVolume waits for its workload's pod to be that
	// first consumer, so that the claim lands on the workload's node;
	// asked for immediate binding, or where the CDIConfig does not honour
	// WaitForFirstConsumer, the importer pod is.
	//
	// The storage fills a smart clone's claim as it binds it: in such a
	// class, a workload's pod binding it sets the clone off, and until the
	// scheduler picks that pod's node the DataVolume is PendingPopulation,
	// as CDI's.
	ready := o.Claim.Status.Phase == corev1.ClaimBound
	o.Smart = smartStrategy(o.Claim)
	if !ready && o.Claim.Status.Phase == corev1.ClaimPending && pod == nil {
		sc, err := r.class(ctx, class)
		if err != nil {
			return ctrl.Result{}, err
		}
		switch {
		case !bindsOnFirstConsumer(sc):
		case o.Smart != "":
			_, picked := o.Claim.Annotations[dvspec.AnnSelectedNode]
			o.PendingPopulation = !picked && !dvspec.ImmediateBindingRequested(dv)
		default:
			if o.WaitsForConsumer, err = r.honoursFirstConsumer(ctx, dv); err != nil {
				return ctrl.Result{}, err
			}
			ready = !o.WaitsForConsumer
		}
	}
	switch {
	case o.Populated || dv.Status.Phase == cdiv1.Failed:
		// Done, one way or the other: the pod, if any, has served.
		return r.finishAndDelete(ctx, dv, o)
	case o.Smart != "" && ready:
		// The storage filled the claim as it bound it.
		if err := r.smartCloneDone(ctx, dv, o.Claim); err != nil {
			return ctrl.Result{}, err
		}
		o.Populated = true
		return r.finishAndDelete(ctx, dv, o)
	case o.Smart != "" && cross:
		// The cloned volume is handed over from the source's namespace;
		// the volume is not watched.
		if err := r.rebind(ctx, dv, o.Claim); err != nil {
			return ctrl.Result{}, err
		}
		return r.finishThenAgain(ctx, dv, o, SmartCloneInterval)
	case o.Smart != "":
		// The claim binds once the storage has copied the source; its
		// change brings the DataVolume back.
		return r.finish(ctx, dv, o, nil)
	case pod == nil && ready && src.IsUpload() && len(r.pod.UploadClientCA) == 0:
		o.Blocked, o.BlockedReason = "this cluster's DataVolume controller takes no uploads: it was started without the upload proxy's client CA", ReasonUploadNotConfigured
	case pod == nil && ready && src.IsClone():
		var err error
		if o.BlockedReason, o.Blocked, err = r.cloneBlocked(ctx, src, false); err != nil {
			return ctrl.Result{}, err
		}
		if o.Blocked != "" {
			// Neither the source claim nor its pods are watched.
			return r.finishThenAgain(ctx, dv, o, CloneRetryInterval)
		}
		fallthrough
	case pod == nil && ready:
		p := ImporterPod(dv, o.Claim, src, po)
		if cross {
			if err := r.holdForClone(ctx, dv, src); err != nil {
				return ctrl.Result{}, err
			}
		}
		if src.IsUpload() || cross {
			var err error
			if p, err = r.uploadPod(ctx, dv, o.Claim, po, cross, dvspec.OwnerRef(dv)); err != nil {
				return ctrl.Result{}, err
			}
		}
		if usesProxyCA(src, po) {
			if err := r.copyProxyCA(ctx, dv, o.Claim, po.TrustedCAProxy); err != nil {
				return ctrl.Result{}, err
			}
		}
		switch err := r.client.Create(ctx, p); {
		case apierrors.IsAlreadyExists(err):
			// Its scratch claim, if any, is made when it is seen.
		case err != nil:
			return ctrl.Result{}, fmt.Errorf("creating the importer pod of DataVolume %s: %w", req.NamespacedName, err)
		default:
			if err := r.ensureScratch(ctx, p, o.Claim, po); err != nil {
				return ctrl.Result{}, err
			}
		}
		if err := r.annotateClaim(ctx, o.Claim, map[string]string{dvspec.AnnImportPod: p.Name}); err != nil {
			return ctrl.Result{}, err
		}
	case pod != nil && pod.Status.Phase == corev1.PodSucceeded && outcomeOf(firstStatus(pod)).ScratchRequired:
		// It wrote nothing: the next pod gets a scratch claim, as CDI's.
		if err := r.annotateClaim(ctx, o.Claim, map[string]string{dvspec.AnnRequiresScratch: "true"}); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("deleting importer pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		o.Pod = nil
		return r.finish(ctx, dv, o, nil)
	case pod != nil && pod.Status.Phase == corev1.PodSucceeded:
		if out := outcomeOf(firstStatus(pod)); !out.Fatal {
			// Mark the claim filled before the pod, and with it the
			// outcome, goes.
			ann := map[string]string{dvspec.AnnPopulatedFor: dv.Name}
			if out.PreallocationApplied {
				ann[dvspec.AnnPreallocationApplied] = "true"
			}
			if err := r.annotateClaim(ctx, o.Claim, ann); err != nil {
				return ctrl.Result{}, err
			}
			o.Populated = true
		}
		return r.finishAndDelete(ctx, dv, o)
	case pod != nil && pod.Status.Phase == corev1.PodFailed:
		return r.finishAndDelete(ctx, dv, o)
	case pod != nil && (pod.Status.Phase == corev1.PodPending || pod.Status.Phase == corev1.PodRunning) && mountsScratch(pod):
		// Made with the pod, unless that was interrupted; the pod waits
		// for it.
		if err := r.ensureScratch(ctx, pod, o.Claim, po); err != nil {
			return ctrl.Result{}, err
		}
		if pod.Status.Phase == corev1.PodRunning {
			return r.progressAgain(ctx, dv, o, pod)
		}
	case pod != nil && pod.Status.Phase == corev1.PodRunning:
		return r.progressAgain(ctx, dv, o, pod)
	}
	return r.finish(ctx, dv, o, nil)
}

// progressAgain reads the progress of pod, which runs, into o, writes the
// status and looks again after ProgressInterval.
func (r *Reconciler) progressAgain(ctx context.Context, dv *cdiv1.DataVolume, o Observed, pod *corev1.Pod) (ctrl.Result, error) {
	if v, ok, err := r.progress.Progress(ctx, pod, string(dv.UID)); err != nil {
		logf.FromContext(ctx).V(1).Info("importer progress not read", "error", err.Error())
	} else if ok {
		o.Progress = &v
	}
	return r.finishThenAgain(ctx, dv, o, ProgressInterval)
}

func firstStatus(pod *corev1.Pod) *corev1.ContainerStatus {
	if len(pod.Status.ContainerStatuses) == 0 {
		return nil
	}
	return &pod.Status.ContainerStatuses[0]
}

// finishAndDelete writes the status that the finished pod gives, then
// deletes the pod.
func (r *Reconciler) finishAndDelete(ctx context.Context, dv *cdiv1.DataVolume, o Observed) (ctrl.Result, error) {
	res, err := r.finish(ctx, dv, o, nil)
	if err != nil {
		return res, err
	}
	if o.Pod == nil {
		return res, r.release(ctx, dv)
	}
	if err := r.client.Delete(ctx, o.Pod, client.Preconditions{UID: &o.Pod.UID}); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("deleting importer pod %s/%s: %w", o.Pod.Namespace, o.Pod.Name, err)
	}
	if o.Source.IsUpload() || o.Source.CrossNamespace(dv.Namespace) {
		// Its key served only that pod.
		if err := r.deleteUploadPod(ctx, dv.Namespace, dv.Name); err != nil {
			return ctrl.Result{}, err
		}
	}
	if o.Claim != nil && mountsScratch(o.Pod) {
		// It served only that pod (which owns it, but the garbage
		// collector may come later).
		if err := r.deleteScratch(ctx, dv.Namespace, o.Claim.Name); err != nil {
			return ctrl.Result{}, err
		}
	}
	if o.Claim != nil && mountsProxyCA(o.Pod) {
		// The proxy's CAs served only that pod.
		if err := r.deleteProxyCA(ctx, dv.Namespace, o.Claim.Name); err != nil {
			return ctrl.Result{}, err
		}
	}
	return res, r.release(ctx, dv)
}

// uploadPod returns dv's upload pod, with its Secret made: a new key and
// certificate, or those of a Secret an earlier attempt left. owner
// controls both (dv, or the claim of a bare claim upload).
func (r *Reconciler) uploadPod(ctx context.Context, dv *cdiv1.DataVolume, claim *corev1.PersistentVolumeClaim, po PodOptions, clone bool, owner metav1.OwnerReference) (*corev1.Pod, error) {
	name := dvspec.UploadPodName(dv.Name)
	certPEM, keyPEM, err := upload.NewServerCert(name, r.clock.Now())
	if err != nil {
		return nil, err
	}
	var cloneCert, cloneKey []byte
	if clone {
		// The source pod's identity, which only this upload pod trusts.
		if cloneCert, cloneKey, err = upload.NewClientCert(po.clientName(), r.clock.Now()); err != nil {
			return nil, err
		}
	}
	sec := UploadSecret(dv, name, certPEM, keyPEM, r.pod.UploadClientCA, cloneCert, cloneKey)
	sec.OwnerReferences = []metav1.OwnerReference{owner}
	switch err := r.client.Create(ctx, sec); {
	case apierrors.IsAlreadyExists(err):
		// Secrets are read uncached: the controller watches none.
		sec = &corev1.Secret{}
		if err := r.apiReader.Get(ctx, client.ObjectKey{Namespace: dv.Namespace, Name: UploadSecretName(name)}, sec); err != nil {
			return nil, fmt.Errorf("reading upload secret %s/%s: %w", dv.Namespace, UploadSecretName(name), err)
		}
		if c := metav1.GetControllerOf(sec); c == nil || c.UID != owner.UID {
			return nil, reconcile.TerminalError(fmt.Errorf("%s %s/%s: secret %s exists and is not its upload pod's", owner.Kind, dv.Namespace, owner.Name, sec.Name))
		}
	case err != nil:
		return nil, fmt.Errorf("creating upload secret %s/%s: %w", sec.Namespace, sec.Name, err)
	}
	p := UploadPod(dv, claim, po, sec.Data[corev1.TLSCertKey], clone)
	p.OwnerReferences = []metav1.OwnerReference{owner}
	return p, nil
}

// mirroredPhase is the phase a claim reports of the pod filling it: a pod
// that ended without filling it (a fatal outcome) is Failed, not
// Succeeded, for virtctl and CDI's tools read Succeeded as filled.
func mirroredPhase(pod *corev1.Pod) corev1.PodPhase {
	if pod.Status.Phase != corev1.PodSucceeded {
		return pod.Status.Phase
	}
	switch out := outcomeOf(firstStatus(pod)); {
	case out.Fatal:
		return corev1.PodFailed
	case out.ScratchRequired:
		// Another pod, with scratch space, comes next.
		return corev1.PodPending
	}
	return corev1.PodSucceeded
}

// finishThenAgain writes the status o gives and looks again after d:
// what the DataVolume waits for (a clone's source, the importer's
// progress) is not watched.
func (r *Reconciler) finishThenAgain(ctx context.Context, dv *cdiv1.DataVolume, o Observed, d time.Duration) (ctrl.Result, error) {
	res, err := r.finish(ctx, dv, o, nil)
	if err == nil && res.IsZero() {
		res.RequeueAfter = d
	}
	return res, err
}

// annotateClaim sets annotations on the claim, unless all are set so.
func (r *Reconciler) annotateClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim, ann map[string]string) error {
	same := true
	for k, v := range ann {
		if cur, ok := claim.Annotations[k]; !ok || cur != v {
			same = false
		}
	}
	if same {
		return nil
	}
	patch := client.MergeFrom(claim.DeepCopy())
	if claim.Annotations == nil {
		claim.Annotations = map[string]string{}
	}
	maps.Copy(claim.Annotations, ann)
	if err := r.client.Patch(ctx, claim, patch); err != nil {
		return fmt.Errorf("annotating claim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	return nil
}

// finish writes the status o gives, records its event, and returns res
// with err.
func (r *Reconciler) finish(ctx context.Context, dv *cdiv1.DataVolume, o Observed, err error) (ctrl.Result, error) {
	st, evs := NextStatus(dv, o, metav1.NewTime(r.clock.Now()))
	if !equality.Semantic.DeepEqual(st, dv.Status) {
		old := dv.ResourceVersion
		upd := dv.DeepCopy()
		upd.Status = st
		if werr := r.client.Status().Update(ctx, upd); werr != nil {
			return stale.RetryOn(ctx, fmt.Errorf("writing the status of DataVolume %s/%s: %w", dv.Namespace, dv.Name, werr))
		}
		r.versions.Replaced(client.ObjectKeyFromObject(dv), old, upd.ResourceVersion)
		for _, ev := range evs {
			r.recorder.Eventf(dv, ev.Type, ev.Reason, "%s", ev.Message)
		}
	}
	return ctrl.Result{}, err
}

// cloneBlocked says why a clone cannot start yet, with the reason: its
// source claim is missing, not bound, a block volume (unless blockOK: the
// storage clones it), or in use by a pod
// that is not one of CDI's (an importer, an upload server or another
// clone's source: a running guest would change the disk while it is
// copied, as CDI's CloneSourceInUse).
func (r *Reconciler) cloneBlocked(ctx context.Context, src dvspec.Source, blockOK bool) (reason, msg string, err error) {
	key := client.ObjectKey{Namespace: src.Claim.Namespace, Name: src.Claim.Name}
	claim := &corev1.PersistentVolumeClaim{}
	switch err := r.client.Get(ctx, key, claim); {
	case apierrors.IsNotFound(err):
		return ReasonCloneNoSource, fmt.Sprintf("source claim %s not found", key), nil
	case err != nil:
		return "", "", fmt.Errorf("reading source claim %s: %w", key, err)
	case claim.Status.Phase != corev1.ClaimBound:
		return ReasonCloneNoSource, fmt.Sprintf("source claim %s is not bound", key), nil
	case dvspec.IsBlock(claim) && !blockOK:
		return ReasonCloneNoSource, fmt.Sprintf("source claim %s is a block volume: cloning one is not supported by virtkit yet", key), nil
	}
	pods := &corev1.PodList{}
	if err := r.client.List(ctx, pods, client.InNamespace(key.Namespace)); err != nil {
		return "", "", fmt.Errorf("listing the pods of %s: %w", key.Namespace, err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Labels[dvspec.LabelComponent] != "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == key.Name {
				return ReasonCloneSourceInUse, fmt.Sprintf("source claim %s is in use by pod %s", key, p.Name), nil
			}
		}
	}
	return "", "", nil
}

// resolve returns src, a sourceRef, with the claim or snapshot its
// DataSource names, or why the clone waits (the DataSource is missing), or
// an error no wait mends (a source virtkit cannot clone).
func (r *Reconciler) resolve(ctx context.Context, src dvspec.Source) (dvspec.Source, string, error) {
	ref := src.Ref
	key := client.ObjectKey{Namespace: *ref.Namespace, Name: ref.Name}
	ds := &cdiv1.DataSource{}
	switch err := r.client.Get(ctx, key, ds); {
	case apierrors.IsNotFound(err):
		return src, fmt.Sprintf("DataSource %s not found", key), nil
	case err != nil:
		return src, "", fmt.Errorf("reading DataSource %s: %w", key, err)
	}
	resolved, err := src.Resolve(ds)
	return resolved, "", err
}

// adopt makes dv the controller of claim and marks it filled by dv.
func (r *Reconciler) adopt(ctx context.Context, dv *cdiv1.DataVolume, claim *corev1.PersistentVolumeClaim) error {
	patch := client.MergeFrom(claim.DeepCopy())
	claim.OwnerReferences = append(claim.OwnerReferences, dvspec.OwnerRef(dv))
	if claim.Annotations == nil {
		claim.Annotations = map[string]string{}
	}
	claim.Annotations[dvspec.AnnPopulatedFor] = dv.Name
	if err := r.client.Patch(ctx, claim, patch); err != nil {
		return fmt.Errorf("adopting claim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	r.recorder.Eventf(dv, corev1.EventTypeNormal, ReasonClaimAdopted, "Claim %s adopted", claim.Name)
	return nil
}
