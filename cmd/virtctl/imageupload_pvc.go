package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CDI's claim annotations of an upload into a bare claim, as KubeVirt's
// virtctl writes and reads them (the wire, not virtkit's rules).
const (
	annUploadTarget = "cdi.kubevirt.io/storage.upload.target"
	annContentType  = "cdi.kubevirt.io/storage.contentType"
	annPodPhase     = "cdi.kubevirt.io/storage.pod.phase"
	annPodReady     = "cdi.kubevirt.io/storage.pod.ready"
	// annImmediateBinding asks that a claim of a class that binds on first
	// consumer be bound by its upload pod (--force-bind).
	annImmediateBinding = "cdi.kubevirt.io/storage.bind.immediate.requested"
)

// bindAnnotations are the annotations --force-bind puts on the DataVolume
// or claim made, none without it.
func bindAnnotations(f uploadFlags) map[string]string {
	if !f.forceBind {
		return nil
	}
	return map[string]string{annImmediateBinding: ""}
}

// claimTarget is an upload into a bare claim (image-upload pvc).
type claimTarget struct{}

func (claimTarget) ensure(ctx context.Context, s *session, name string, f uploadFlags) error {
	pvc := &corev1.PersistentVolumeClaim{}
	err := s.kube.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, pvc)
	switch {
	case err == nil:
		if _, ok := pvc.Annotations[annUploadTarget]; !ok {
			return fmt.Errorf("PVC %s/%s not available for upload: it has no %s annotation", s.ns, name, annUploadTarget)
		}
		if pvc.Annotations[annPodPhase] == string(corev1.PodSucceeded) {
			return fmt.Errorf("PVC %s/%s already successfully imported/cloned/updated", s.ns, name)
		}
		fmt.Fprintf(s.stdout, "Using existing PVC %s/%s\n", s.ns, name)
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading PVC %s/%s: %w", s.ns, name, err)
	case f.noCreate:
		return fmt.Errorf("PVC %s/%s not found, and --no-create says not to create it", s.ns, name)
	case f.size == "":
		return &usageError{cmd: "image-upload", err: errors.New("when creating a PVC, --size must be specified")}
	}
	size, err := resource.ParseQuantity(f.size)
	if err != nil {
		return &usageError{cmd: "image-upload", err: fmt.Errorf("--size %s: %w", f.size, err)}
	}
	mode := corev1.ReadWriteOnce
	if f.accessMode != "" {
		if f.accessMode == string(corev1.ReadOnlyMany) {
			return errors.New("cannot upload to a readonly volume, use either ReadWriteOnce or ReadWriteMany if supported")
		}
		mode = corev1.PersistentVolumeAccessMode(f.accessMode)
	}
	pvc = &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name,
		Annotations: map[string]string{annUploadTarget: "", annContentType: string(f.contentType())}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{mode},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}}}}
	for k, v := range bindAnnotations(f) {
		pvc.Annotations[k] = v
	}
	if f.storageClass != "" {
		pvc.Spec.StorageClassName = &f.storageClass
	}
	switch f.mode {
	case "block":
		pvc.Spec.VolumeMode = ptrTo(corev1.PersistentVolumeBlock)
	case "filesystem":
		pvc.Spec.VolumeMode = ptrTo(corev1.PersistentVolumeFilesystem)
	}
	if err := s.kube.Create(ctx, pvc); err != nil {
		return fmt.Errorf("creating PVC %s/%s: %w", s.ns, name, err)
	}
	fmt.Fprintf(s.stdout, "PersistentVolumeClaim %s/%s created\n", s.ns, name)
	return nil
}

// wait polls the claim's annotations, which mirror its upload pod.
func (claimTarget) wait(ctx context.Context, s *session, name string, timeout time.Duration, stored bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	what := "its upload pod to be ready"
	if stored {
		what = "the upload to be processed"
	}
	said := false
	for {
		pvc := &corev1.PersistentVolumeClaim{}
		err := s.kube.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, pvc)
		switch {
		case err != nil && !apierrors.IsNotFound(err):
			return fmt.Errorf("reading PVC %s/%s: %w", s.ns, name, err)
		case err == nil && stored && pvc.Annotations[annPodPhase] == string(corev1.PodSucceeded):
			return nil
		case err == nil && !stored && pvc.Annotations[annPodReady] == "true":
			return nil
		case err == nil && pvc.Annotations[annPodPhase] == string(corev1.PodFailed):
			return fmt.Errorf("the upload pod of PVC %s/%s failed: `kubectl logs -n %s cdi-upload-%s` says why", s.ns, name, s.ns, name)
		}
		if !said {
			fmt.Fprintf(s.stdout, "Waiting for %s...\n", what)
			said = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for %s of PVC %s/%s", what, s.ns, name)
		case <-time.After(s.poll):
		}
	}
}
