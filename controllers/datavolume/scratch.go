package datavolume

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/storage/dvspec"
	"github.com/virtkit/virtkit/virt/storage/importer/contract"
)

// ScratchClaimName is the scratch claim of the pod filling the claim
// called claim, as CDI names it.
func ScratchClaimName(claim string) string { return claim + "-scratch" }

// scratchVolume is the importer pod's volume of its scratch claim.
const scratchVolume = "cdi-scratch-vol"

// wantsScratch says whether the pod filling pvc for dv from a source of
// kind src mounts a scratch claim, as CDI decides it. A user's upload
// always does: its image may need converting and it cannot be sent
// twice. A clone's stream (clone) never does, nor a blank disk nor an
// archive's files. Any other source does once an earlier pod found an
// image to convert and asked for it on the claim
// (dvspec.AnnRequiresScratch).
func wantsScratch(dv *cdiv1.DataVolume, pvc *corev1.PersistentVolumeClaim, src string, clone bool) bool {
	switch {
	case clone || dvspec.IsArchive(dv) || src == contract.SourceBlank || src == contract.SourceSend:
		return false
	case src == contract.SourceUpload:
		return true
	}
	return pvc.Annotations[dvspec.AnnRequiresScratch] == "true"
}

// ScratchClaim is the scratch claim of pod, which fills pvc: ReadWriteOnce,
// a file system, in class (pvc's when empty), owned by the pod so that it
// goes with it. It holds what pvc's disk can hold: pvc's usable space
// (with pvc's file system overhead, none for a block claim) plus the
// scratch claim's own overhead, aligned up to 1 MiB, as CDI sizes it.
func ScratchClaim(pvc *corev1.PersistentVolumeClaim, pod *corev1.Pod, class string, overhead, scratchOverhead float64) *corev1.PersistentVolumeClaim {
	usable := dvspec.ClaimCapacity(pvc)
	if !dvspec.IsBlock(pvc) {
		usable = contract.UsableSpace(usable, overhead)
	}
	size := contract.AlignUp(contract.RequiredSpace(usable, scratchOverhead))
	if class == "" {
		class = ptr.Deref(pvc.Spec.StorageClassName, "")
	}
	c := &corev1.PersistentVolumeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: pvc.Namespace, Name: ScratchClaimName(pvc.Name),
			Labels: map[string]string{dvspec.LabelApp: dvspec.AppCDI},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeMode:  ptr.To(corev1.PersistentVolumeFilesystem),
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(size, resource.BinarySI)}},
		},
	}
	if class != "" {
		c.Spec.StorageClassName = &class
	}
	return c
}

// mountsScratch says whether pod mounts a scratch claim.
func mountsScratch(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Name == scratchVolume {
			return true
		}
	}
	return false
}

// ensureScratch makes the scratch claim of pod, which fills pvc, unless
// the pod mounts none or it exists; the class is po's ScratchClass (the
// CDIConfig's scratchSpaceStorageClass), else pvc's, as CDI picks it.
func (r *Reconciler) ensureScratch(ctx context.Context, pod *corev1.Pod, pvc *corev1.PersistentVolumeClaim, po PodOptions) error {
	if !mountsScratch(pod) {
		return nil
	}
	key := client.ObjectKey{Namespace: pvc.Namespace, Name: ScratchClaimName(pvc.Name)}
	switch err := r.client.Get(ctx, key, &corev1.PersistentVolumeClaim{}); {
	case err == nil:
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading scratch claim %s: %w", key, err)
	}
	c := ScratchClaim(pvc, pod, po.ScratchClass, po.overhead(), po.scratchOverhead())
	if err := r.client.Create(ctx, c); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating scratch claim %s: %w", key, err)
	}
	return nil
}

// deleteScratch deletes the scratch claim of the pod that filled the
// claim called claim, if there is one.
func (r *Reconciler) deleteScratch(ctx context.Context, ns, claim string) error {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ScratchClaimName(claim)}}
	if err := r.client.Delete(ctx, c); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting scratch claim %s/%s: %w", ns, c.Name, err)
	}
	return nil
}
