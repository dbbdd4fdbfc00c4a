package datavolume

import (
	"context"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/virt/storage/dvspec"
	"github.com/virtkit/virtkit/virt/storage/importer/contract"
)

// CloneFinalizer holds a DataVolume cloning from another namespace until
// the pod and Secret it made there are gone: no owner reference crosses
// namespaces.
const CloneFinalizer = "cdi.kubevirt.io/dataVolumeFinalizer"

// AnnCloneSourceNamespace records, with the finalizer, where those are.
const AnnCloneSourceNamespace = "virtkit.io/clone-source-namespace"

// holdForClone adds the finalizer and the source's namespace to dv before
// anything is made in that namespace.
func (r *Reconciler) holdForClone(ctx context.Context, dv *cdiv1.DataVolume, src dvspec.Source) error {
	if controllerutil.ContainsFinalizer(dv, CloneFinalizer) && dv.Annotations[AnnCloneSourceNamespace] == src.SourceNamespace() {
		return nil
	}
	old := dv.ResourceVersion
	patch := client.MergeFromWithOptions(dv.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(dv, CloneFinalizer)
	if dv.Annotations == nil {
		dv.Annotations = map[string]string{}
	}
	dv.Annotations[AnnCloneSourceNamespace] = src.SourceNamespace()
	if err := r.client.Patch(ctx, dv, patch); err != nil {
		return fmt.Errorf("adding the clone finalizer to DataVolume %s/%s: %w", dv.Namespace, dv.Name, err)
	}
	r.versions.Replaced(client.ObjectKeyFromObject(dv), old, dv.ResourceVersion)
	return nil
}

// release deletes the clone's source pod and Secret (or a CSI clone's
// transfer claim), then drops the finalizer.
func (r *Reconciler) release(ctx context.Context, dv *cdiv1.DataVolume) error {
	if !controllerutil.ContainsFinalizer(dv, CloneFinalizer) {
		return nil
	}
	if ns := dv.Annotations[AnnCloneSourceNamespace]; ns != "" {
		name := CloneSourcePodName(dv)
		for _, obj := range []client.Object{
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: UploadSecretName(name)}},
			&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dvspec.TransferClaimName(dv.UID)}},
		} {
			if err := r.client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting the clone source %s/%s of DataVolume %s/%s: %w", ns, obj.GetName(), dv.Namespace, dv.Name, err)
			}
		}
	}
	old := dv.ResourceVersion
	patch := client.MergeFromWithOptions(dv.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(dv, CloneFinalizer)
	if err := r.client.Patch(ctx, dv, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the clone finalizer of DataVolume %s/%s: %w", dv.Namespace, dv.Name, err)
	}
	r.versions.Replaced(client.ObjectKeyFromObject(dv), old, dv.ResourceVersion)
	return nil
}

// cloneSource makes, once dv's upload pod (target) takes connections, the
// pod that sends the source's disk to it, and returns that pod if it
// exists.
func (r *Reconciler) cloneSource(ctx context.Context, dv *cdiv1.DataVolume, src dvspec.Source, target *corev1.Pod, po PodOptions) (*corev1.Pod, error) {
	key := client.ObjectKey{Namespace: src.Claim.Namespace, Name: CloneSourcePodName(dv)}
	pod := &corev1.Pod{}
	switch err := r.client.Get(ctx, key, pod); {
	case err == nil:
		return pod, nil
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading clone source pod %s: %w", key, err)
	}
	if target.Status.Phase != corev1.PodRunning || !conditions.Pod().IsTrue(target.Status.Conditions, corev1.PodReady) || target.Status.PodIP == "" {
		return nil, nil
	}
	up := &corev1.Secret{}
	if err := r.apiReader.Get(ctx, client.ObjectKey{Namespace: dv.Namespace, Name: UploadSecretName(target.Name)}, up); err != nil {
		return nil, fmt.Errorf("reading upload secret %s/%s: %w", dv.Namespace, UploadSecretName(target.Name), err)
	}
	if err := r.client.Create(ctx, CloneSourceSecret(dv, src, up)); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating the clone source secret in %s: %w", key.Namespace, err)
	}
	url := "https://" + net.JoinHostPort(target.Status.PodIP, strconv.Itoa(contract.UploadPort))
	if err := r.client.Create(ctx, CloneSourcePod(dv, src, po, url)); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating clone source pod %s: %w", key, err)
	}
	return nil, nil
}

// sourceFailed says whether the clone's source pod ended in a way no
// restart mends: its target refused the disk, or it could not start.
func sourceFailed(pod *corev1.Pod) bool {
	if pod == nil {
		return false
	}
	switch pod.Status.Phase {
	case corev1.PodFailed:
		return true
	case corev1.PodSucceeded:
		return outcomeOf(firstStatus(pod)).Fatal
	}
	return false
}
