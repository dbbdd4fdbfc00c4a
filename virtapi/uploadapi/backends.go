package uploadapi

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/virt/storage/dvspec"
	"github.com/virtkit/virtkit/virt/storage/importer/contract"
	"github.com/virtkit/virtkit/virt/storage/upload"
)

// ClaimBackends finds a claim's upload server: the claim must take an
// upload and not have one yet; its upload pod (dvspec.UploadPodName) must
// be controlled by the claim's DataVolume (or by the claim, for an upload
// into a bare claim), ready, and have an IP. The pod
// is dialled at that IP, presenting the proxy's client certificate, and
// must present the certificate its pod carries.
//
// The pod's annotation is trusted as far as the namespace is: whoever may
// write the pod may also read the claim the upload goes to.
type ClaimBackends struct {
	// Reader reads claims and pods (get on persistentvolumeclaims and
	// pods).
	Reader client.Reader
	// TLS presents the proxy's client certificate to upload servers.
	TLS func() (*tls.Config, error)
}

var _ upload.Backends = ClaimBackends{}

// Backend implements upload.Backends.
func (b ClaimBackends) Backend(ctx context.Context, namespace, claim string) (upload.Backend, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	switch err := b.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: claim}, pvc); {
	case apierrors.IsNotFound(err):
		return upload.Backend{}, fmt.Errorf("claim %s/%s not found: %w", namespace, claim, upload.ErrNoUpload)
	case err != nil:
		return upload.Backend{}, err
	}
	if _, ok := pvc.Annotations[dvspec.AnnUploadRequest]; !ok {
		return upload.Backend{}, fmt.Errorf("claim %s/%s does not take uploads: %w", namespace, claim, upload.ErrNoUpload)
	}
	if pvc.Annotations[dvspec.AnnPodPhase] == string(corev1.PodSucceeded) {
		return upload.Backend{}, fmt.Errorf("claim %s/%s is already filled: %w", namespace, claim, upload.ErrNoUpload)
	}
	name := dvspec.UploadPodName(claim)
	pod := &corev1.Pod{}
	switch err := b.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod); {
	case apierrors.IsNotFound(err):
		return upload.Backend{}, fmt.Errorf("the upload pod of claim %s/%s does not exist yet: %w", namespace, claim, upload.ErrNotReady)
	case err != nil:
		return upload.Backend{}, err
	}
	// Its controller is the claim's DataVolume, or the claim itself (an
	// upload into a bare claim).
	owner := metav1.GetControllerOf(pod)
	dvOwned := owner != nil && owner.Kind == "DataVolume" && owner.APIVersion == cdiv1.SchemeGroupVersion.String() && owner.Name == claim
	claimOwned := owner != nil && owner.Kind == "PersistentVolumeClaim" && owner.APIVersion == "v1" && owner.UID == pvc.UID
	if !dvOwned && !claimOwned {
		return upload.Backend{}, fmt.Errorf("pod %s/%s is not the upload pod of claim %s: %w", namespace, name, claim, upload.ErrNoUpload)
	}
	if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" || !conditions.Pod().IsTrue(pod.Status.Conditions, corev1.PodReady) {
		return upload.Backend{}, fmt.Errorf("the upload pod of claim %s/%s is not ready (%s): %w", namespace, claim, pod.Status.Phase, upload.ErrNotReady)
	}
	base, err := b.TLS()
	if err != nil {
		return upload.Backend{}, err
	}
	cfg, err := upload.PinnedTLS(base, []byte(pod.Annotations[contract.AnnUploadServerCert]))
	if err != nil {
		return upload.Backend{}, fmt.Errorf("pod %s/%s: %w", namespace, name, err)
	}
	u := &url.URL{Scheme: "https", Host: net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(contract.UploadPort))}
	return upload.Backend{URL: u, TLS: cfg}, nil
}
