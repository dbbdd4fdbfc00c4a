package datavolume

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/virt/storage/dvspec"
)

// setupClaimUploads registers the controller of bare claim uploads: a
// claim annotated cdi.kubevirt.io/storage.upload.target that no
// DataVolume controls gets an upload pod, as CDI's upload controller
// gives it (`virtctl image-upload pvc`).
func (r *Reconciler) setupClaimUploads(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("claimupload").
		For(&corev1.PersistentVolumeClaim{}, builder.WithPredicates(predicate.NewPredicateFuncs(takesBareUpload))).
		Owns(&corev1.Pod{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.workers}).
		Complete(reconcile.Func(r.reconcileClaimUpload))
}

// takesBareUpload says whether obj is a claim marked for upload that no
// DataVolume controls.
func takesBareUpload(obj client.Object) bool {
	if _, ok := obj.GetAnnotations()[dvspec.AnnUploadRequest]; !ok {
		return false
	}
	c := metav1.GetControllerOf(obj)
	return c == nil || c.Kind != "DataVolume"
}

// claimOwner makes the claim the controller of its upload pod and Secret.
func claimOwner(pvc *corev1.PersistentVolumeClaim) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Name: pvc.Name, UID: pvc.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// reconcileClaimUpload runs a bound claim's upload pod until an upload is
// stored, mirroring the pod's phase and readiness on the claim (which
// virtctl waits on), then deletes the pod and its Secret.
func (r *Reconciler) reconcileClaimUpload(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.client.Get(ctx, req.NamespacedName, pvc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !takesBareUpload(pvc) || pvc.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	// The upload pod and Secret are made for a DataVolume-shaped stand-in
	// of the claim, then owned by the claim itself.
	dv := &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
		Spec: cdiv1.DataVolumeSpec{PVC: pvc.Spec.DeepCopy(), ContentType: cdiv1.DataVolumeContentType(pvc.Annotations[dvspec.AnnContentType])}}
	name := dvspec.UploadPodName(pvc.Name)
	done := pvc.Annotations[dvspec.AnnPodPhase] == string(corev1.PodSucceeded)
	pod := &corev1.Pod{}
	switch err := r.client.Get(ctx, client.ObjectKey{Namespace: pvc.Namespace, Name: name}, pod); {
	case apierrors.IsNotFound(err):
		pod = nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("reading upload pod %s/%s: %w", pvc.Namespace, name, err)
	case !metav1.IsControlledBy(pod, pvc):
		return ctrl.Result{}, fmt.Errorf("claim %s: pod %s exists and is not its upload pod", req.NamespacedName, name)
	}
	class := ptr.Deref(pvc.Spec.StorageClassName, "")
	ready := pvc.Status.Phase == corev1.ClaimBound
	if !ready && pvc.Status.Phase == corev1.ClaimPending && pod == nil && !done {
		// The upload pod is the first consumer of a WaitForFirstConsumer
		// claim only if the claim asks for immediate binding or the
		// CDIConfig does not honour WaitForFirstConsumer.
		sc, err := r.class(ctx, class)
		if err != nil {
			return ctrl.Result{}, err
		}
		if bindsOnFirstConsumer(sc) {
			wait, err := r.honoursFirstConsumer(ctx, pvc)
			if err != nil {
				return ctrl.Result{}, err
			}
			ready = !wait
		}
	}
	switch {
	case done:
		return ctrl.Result{}, r.deleteUploadPod(ctx, pvc.Namespace, pvc.Name)
	case pod == nil && ready:
		if len(r.pod.UploadClientCA) == 0 {
			return ctrl.Result{}, nil
		}
		po, err := r.podOptions(ctx, class)
		if err != nil {
			return ctrl.Result{}, err
		}
		p, err := r.uploadPod(ctx, dv, pvc, po, false, claimOwner(pvc))
		if err != nil {
			return ctrl.Result{}, err
		}
		switch err := r.client.Create(ctx, p); {
		case apierrors.IsAlreadyExists(err):
		case err != nil:
			return ctrl.Result{}, fmt.Errorf("creating upload pod %s/%s: %w", p.Namespace, p.Name, err)
		default:
			return ctrl.Result{}, r.ensureScratch(ctx, p, pvc, po)
		}
		return ctrl.Result{}, nil
	case pod == nil:
		return ctrl.Result{}, nil
	}
	phase := mirroredPhase(pod)
	ann := map[string]string{dvspec.AnnPodPhase: string(phase), dvspec.AnnPodReady: strconv.FormatBool(conditions.Pod().IsTrue(pod.Status.Conditions, corev1.PodReady))}
	if phase == corev1.PodSucceeded {
		ann[dvspec.AnnPopulatedFor] = pvc.Name
	}
	if err := r.annotateClaim(ctx, pvc, ann); err != nil {
		return ctrl.Result{}, err
	}
	if phase == corev1.PodSucceeded {
		return ctrl.Result{}, r.deleteUploadPod(ctx, pvc.Namespace, pvc.Name)
	}
	if mountsScratch(pod) && (phase == corev1.PodPending || phase == corev1.PodRunning) {
		// Made with the pod, unless that was interrupted.
		po, err := r.podOptions(ctx, class)
		if err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.ensureScratch(ctx, pod, pvc, po)
	}
	return ctrl.Result{}, nil
}

// deleteUploadPod deletes the upload pod of the claim called claim, its
// Secret and its scratch claim.
func (r *Reconciler) deleteUploadPod(ctx context.Context, ns, claim string) error {
	name := dvspec.UploadPodName(claim)
	for _, obj := range []client.Object{
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: UploadSecretName(name)}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ScratchClaimName(claim)}},
	} {
		if err := r.client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s/%s: %w", ns, obj.GetName(), err)
		}
	}
	return nil
}
