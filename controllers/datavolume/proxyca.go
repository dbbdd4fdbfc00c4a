package datavolume

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/storage/dvspec"
)

// ProxyCAConfigMapName names the copy, in a claim's namespace, of the
// import proxy's CA ConfigMap that the claim's importer pod mounts (CDI's
// name).
func ProxyCAConfigMapName(claim string) string { return "import-proxy-cm-" + claim }

// usesProxyCA says whether the importer of src trusts the import proxy's
// CAs: a web or registry source the importer reaches, while the CDIConfig
// names a trustedCAProxy.
func usesProxyCA(src dvspec.Source, o PodOptions) bool {
	return o.TrustedCAProxy != "" && (src.HTTP != nil || src.Registry != nil)
}

// mountsProxyCA says whether pod mounts a copy of the import proxy's CAs.
func mountsProxyCA(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Name == proxyCAVolume {
			return true
		}
	}
	return false
}

// proxyCAVolume is the importer pod's volume of the import proxy's CAs.
const proxyCAVolume = "cdi-proxy-cert-vol"

// copyProxyCA copies the ConfigMap name of the controller's namespace into
// the namespace of dv's claim, as ProxyCAConfigMapName(claim), owned by dv
// (a pod cannot mount a ConfigMap of another namespace). A copy already
// there is kept as it is, not refreshed while its import runs; it is
// deleted with the importer pod, so each import copies the CAs afresh.
func (r *Reconciler) copyProxyCA(ctx context.Context, dv *cdiv1.DataVolume, claim *corev1.PersistentVolumeClaim, name string) error {
	if r.namespace == "" {
		return fmt.Errorf("the CDIConfig's importProxy.trustedCAProxy names ConfigMap %s, but the DataVolume controller was given no namespace to read it from", name)
	}
	// ConfigMaps are read uncached: the controller watches none.
	src := &corev1.ConfigMap{}
	if err := r.apiReader.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: name}, src); err != nil {
		return fmt.Errorf("the import proxy's CAs (the CDIConfig's importProxy.trustedCAProxy): ConfigMap %s/%s: %w", r.namespace, name, err)
	}
	cp := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: claim.Namespace, Name: ProxyCAConfigMapName(claim.Name),
			Labels:          map[string]string{dvspec.LabelApp: dvspec.AppCDI},
			OwnerReferences: []metav1.OwnerReference{dvspec.OwnerRef(dv)}},
		Data: src.Data, BinaryData: src.BinaryData,
	}
	if err := r.client.Create(ctx, cp); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("copying the import proxy's CAs into %s/%s: %w", cp.Namespace, cp.Name, err)
	}
	return nil
}

// deleteProxyCA deletes the copy of the import proxy's CAs of claim, if
// there is one.
func (r *Reconciler) deleteProxyCA(ctx context.Context, ns, claim string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ProxyCAConfigMapName(claim)}}
	if err := r.client.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the import proxy's CAs %s/%s: %w", ns, cm.Name, err)
	}
	return nil
}
