package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	exportv1 "kubevirt.io/api/export/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/internal/localcluster"
	"github.com/virtkit/virtkit/local/cluster"
	"github.com/virtkit/virtkit/operator"
	"github.com/virtkit/virtkit/virt/storage/export"
	exporttoken "github.com/virtkit/virtkit/virt/storage/export/token"
)

// exportOnRealNode exports a claim on a cluster the operator installed:
// virt-controller runs the export controller, whose server pod runs on
// the real node from the export server image, the claim published by the
// CSI driver, its certificate signed by the operator's export CA (the
// internal link's cert); the server answers on the internal link's name
// with the export's token and refuses a request without it, straight and
// through the export proxy the operator installed. Deleting the
// export and the claim leaves nothing.
func exportOnRealNode(ctx context.Context, t *testing.T, w *world, c *localcluster.Cluster, node string) {
	t.Helper()
	const ns = "default"
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "exported"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}}}}
	must(t, w.c.Create(ctx, pvc))
	vme := &exportv1.VirtualMachineExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "exported"},
		Spec: exportv1.VirtualMachineExportSpec{Source: corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: pvc.Name}}}
	must(t, w.c.Create(ctx, vme))
	eventually(ctx, t, "the export Ready", func() (bool, string) {
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(vme), vme); err != nil {
			return false, err.Error()
		}
		return vme.Status != nil && vme.Status.Phase == exportv1.Ready && vme.Status.Links != nil && vme.Status.Links.Internal != nil,
			fmt.Sprintf("%+v", vme.Status)
	})
	pod := &corev1.Pod{}
	must(t, w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: export.PodName(vme.Name)}, pod))
	assert.Equal(t, pod.Spec.NodeName, node)
	assert.Equal(t, pod.Spec.Containers[0].Image, c.Registry()+"/virtkit/"+operator.ImageExportServer+":"+cluster.ImageTag)

	// The link's cert is the operator's export CA.
	caSecret := &corev1.Secret{}
	must(t, w.c.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: operator.SecretExportCA}, caSecret))
	ca, err := certs.ParseCerts(caSecret.Data[corev1.TLSCertKey])
	must(t, err)
	linked, err := certs.ParseCerts([]byte(vme.Status.Links.Internal.Cert))
	must(t, err)
	assert.Assert(t, len(ca) == 1 && len(linked) == 1 && ca[0].Equal(linked[0]), "the internal link's cert is not the operator's export CA")

	// Inside the cluster the link's name is the Service's; from the host,
	// the pod's address under that name.
	roots := x509.NewCertPool()
	roots.AddCert(linked[0])
	addr := net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(export.ServerPort))
	hc := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: export.ServiceHost(ns, vme.Name), MinVersion: tls.VersionTLS12},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}}}
	defer hc.CloseIdleConnections()
	vols := vme.Status.Links.Internal.Volumes
	assert.Assert(t, len(vols) == 1 && len(vols[0].Formats) > 0, "internal volume links: %+v", vols)
	var dirURL string
	for _, f := range vols[0].Formats {
		if f.Format == exportv1.Dir {
			dirURL = f.Url
		}
	}
	assert.Assert(t, dirURL != "", "no dir link in %+v", vols[0].Formats)
	tok := &corev1.Secret{}
	must(t, w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: *vme.Status.TokenSecretRef}, tok))
	get := func(url, token string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		must(t, err)
		if token != "" {
			req.Header.Set(exporttoken.Header, token)
		}
		resp, err := hc.Do(req)
		must(t, err)
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode
	}
	assert.Equal(t, get(dirURL, string(tok.Data[exporttoken.Key])), http.StatusOK, "the claim's listing with the token")
	assert.Equal(t, get(dirURL, ""), http.StatusUnauthorized, "the claim's listing without a token")

	// Through the export proxy the operator installed (its pod on the
	// node's network, its certificate from the cluster's CA bundle for
	// its Service's name): the same answers, and 404 for no such export.
	var proxies corev1.PodList
	must(t, w.c.List(ctx, &proxies, client.InNamespace(cluster.Namespace), client.MatchingLabels{virtv1.AppLabel: deploy.ExportProxyName}))
	assert.Equal(t, len(proxies.Items), 1, "export proxy pods: %s", namespacePods(ctx, t, w))
	proxyPod := proxies.Items[0]
	assert.Equal(t, proxyPod.Spec.Containers[0].Image, c.Registry()+"/virtkit/"+operator.ImageExportProxy+":"+cluster.ImageTag)
	bundle := &corev1.ConfigMap{}
	must(t, w.c.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: operator.ConfigMapCA}, bundle))
	proxyRoots := x509.NewCertPool()
	assert.Assert(t, proxyRoots.AppendCertsFromPEM([]byte(bundle.Data[operator.CABundleKey])), "no CA in the bundle")
	proxyAddr := net.JoinHostPort(proxyPod.Status.PodIP, strconv.Itoa(int(proxyPod.Spec.Containers[0].Ports[0].ContainerPort)))
	hc = &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: proxyRoots, ServerName: deploy.ExportProxyName + "." + cluster.Namespace + ".svc", MinVersion: tls.VersionTLS12},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, proxyAddr)
		}}}
	defer hc.CloseIdleConnections()
	external := export.ExternalBase(proxyAddr, ns, vme.Name) + "/volumes/" + pvc.Name + "/dir/"
	assert.Equal(t, get(external, string(tok.Data[exporttoken.Key])), http.StatusOK, "the listing through the proxy with the token")
	assert.Equal(t, get(external, ""), http.StatusUnauthorized, "the listing through the proxy without a token")
	assert.Equal(t, get(export.ExternalBase(proxyAddr, ns, "no-such-export")+"/volumes/x/dir/", "x"), http.StatusNotFound, "no such export through the proxy")

	must(t, w.c.Delete(ctx, vme))
	must(t, w.c.Delete(ctx, pvc))
	eventually(ctx, t, "the export's pod and the claim gone", func() (bool, string) {
		perr := w.c.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})
		cerr := w.c.Get(ctx, client.ObjectKeyFromObject(pvc), &corev1.PersistentVolumeClaim{})
		return apierrors.IsNotFound(perr) && apierrors.IsNotFound(cerr), fmt.Sprintf("pod: %v, claim: %v", perr, cerr)
	})
}
