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
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
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

// claimExport is an export of an empty claim made for a test, Ready.
type claimExport struct {
	w     *world
	pvc   *corev1.PersistentVolumeClaim
	vme   *exportv1.VirtualMachineExport
	token string
}

// exportClaim makes a claim named name in ns and an export of it, and
// waits until the export is Ready with its links (external ones too with
// external). The caller defers delete as soon as it has it, so that
// nothing of it stays behind for the tests after, whatever it finds.
func exportClaim(ctx context.Context, t *testing.T, w *world, ns, name string, external bool) *claimExport {
	t.Helper()
	e := &claimExport{w: w}
	e.pvc = &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}}}}
	must(t, w.c.Create(ctx, e.pvc))
	returned := false
	defer func() {
		if !returned { // the caller gets nothing to delete
			e.delete(ctx, t)
		}
	}()
	e.vme = &exportv1.VirtualMachineExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: exportv1.VirtualMachineExportSpec{Source: corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: name}}}
	must(t, w.c.Create(ctx, e.vme))
	eventually(ctx, t, "the export Ready", func() (bool, string) {
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(e.vme), e.vme); err != nil {
			return false, err.Error()
		}
		st := e.vme.Status
		return st != nil && st.Phase == exportv1.Ready && st.Links != nil && st.Links.Internal != nil && (!external || st.Links.External != nil),
			fmt.Sprintf("%+v", st)
	})
	tok := &corev1.Secret{}
	must(t, w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: *e.vme.Status.TokenSecretRef}, tok))
	e.token = string(tok.Data[exporttoken.Key])
	returned = true
	return e
}

// dirLink is the claim's dir link among links.
func (e *claimExport) dirLink(t *testing.T, links *exportv1.VirtualMachineExportLink) string {
	t.Helper()
	assert.Assert(t, links != nil && len(links.Volumes) == 1, "volume links: %+v", links)
	for _, f := range links.Volumes[0].Formats {
		if f.Format == exportv1.Dir {
			return f.Url
		}
	}
	t.Fatalf("no dir link in %+v", links.Volumes[0].Formats)
	return ""
}

// status GETs url through hc with token (none when empty) and returns
// the status code and the body's start.
func status(ctx context.Context, t *testing.T, hc *http.Client, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	must(t, err)
	if token != "" {
		req.Header.Set(exporttoken.Header, token)
	}
	resp, err := hc.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b)
}

// expectStatus checks that GET url with token answers want.
func expectStatus(ctx context.Context, t *testing.T, hc *http.Client, url, token string, want int, what string) {
	t.Helper()
	if got, body := status(ctx, t, hc, url, token); got != want {
		t.Errorf("%s: GET %s: %d %q, want %d", what, url, got, body, want)
	}
}

// delete deletes the export and the claim and waits until they, and the
// export's server pod, are gone.
func (e *claimExport) delete(ctx context.Context, t *testing.T) {
	t.Helper()
	pod := client.ObjectKey{Namespace: e.pvc.Namespace, Name: export.PodName(e.pvc.Name)}
	if e.vme != nil {
		must(t, client.IgnoreNotFound(e.w.c.Delete(ctx, e.vme)))
	}
	must(t, client.IgnoreNotFound(e.w.c.Delete(ctx, e.pvc)))
	eventually(ctx, t, "the export's pod and the claim gone", func() (bool, string) {
		perr := e.w.c.Get(ctx, pod, &corev1.Pod{})
		cerr := e.w.c.Get(ctx, client.ObjectKeyFromObject(e.pvc), &corev1.PersistentVolumeClaim{})
		return apierrors.IsNotFound(perr) && apierrors.IsNotFound(cerr), fmt.Sprintf("pod: %v, claim: %v", perr, cerr)
	})
}

// clientTo is an HTTPS client that dials addr whatever the URL's host,
// checking the certificate against roots for serverName.
func clientTo(addr, serverName string, roots *x509.CertPool) *http.Client {
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}}}
}

// exportOnRealNode exports a claim on a cluster the operator installed:
// virt-controller runs the export controller, whose server pod runs on
// the real node from the export server image, the claim published by the
// CSI driver, its certificate signed by the operator's export CA (the
// internal link's cert); the server answers on the internal link's name
// with the export's token and refuses a request without it, straight and
// through the export proxy the operator installed. Deleting the export
// and the claim leaves nothing.
func exportOnRealNode(ctx context.Context, t *testing.T, w *world, c *localcluster.Cluster, node string) {
	t.Helper()
	const ns = "default"
	e := exportClaim(ctx, t, w, ns, "exported", false)
	defer e.delete(ctx, t)
	vme := e.vme
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
	hc := clientTo(net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(export.ServerPort)), export.ServiceHost(ns, vme.Name), roots)
	defer hc.CloseIdleConnections()
	dir := e.dirLink(t, vme.Status.Links.Internal)
	expectStatus(ctx, t, hc, dir, e.token, http.StatusOK, "the claim's listing with the token")
	expectStatus(ctx, t, hc, dir, "", http.StatusUnauthorized, "the claim's listing without a token")

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
	pc := clientTo(proxyAddr, deploy.ExportProxyName+"."+cluster.Namespace+".svc", proxyRoots)
	defer pc.CloseIdleConnections()
	external := export.ExternalBase(proxyAddr, ns, vme.Name) + export.DirPath(e.pvc.Name) + "/"
	expectStatus(ctx, t, pc, external, e.token, http.StatusOK, "the listing through the proxy with the token")
	expectStatus(ctx, t, pc, external, "", http.StatusUnauthorized, "the listing through the proxy without a token")
	expectStatus(ctx, t, pc, export.ExternalBase(proxyAddr, ns, "no-such-export")+"/volumes/x/dir/", "x", http.StatusNotFound,
		"no such export through the proxy")

	// An Ingress to the proxy in the install namespace gives the export
	// external links through its host (no ingress controller runs here:
	// the links are checked, not followed).
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: "vm-export"},
		Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
			Name: export.ProxyServiceName, Port: networkingv1.ServiceBackendPort{Number: 443}}},
			Rules: []networkingv1.IngressRule{{Host: "vm-export.example.test"}}}}
	must(t, w.c.Create(ctx, ing))
	defer func() { must(t, client.IgnoreNotFound(w.c.Delete(context.Background(), ing))) }()
	eventually(ctx, t, "external links through the Ingress's host", func() (bool, string) {
		must(t, w.c.Get(ctx, client.ObjectKeyFromObject(vme), vme))
		l := vme.Status.Links
		return l != nil && l.External != nil && len(l.External.Volumes) == 1 &&
			strings.HasPrefix(l.External.Volumes[0].Formats[0].Url, export.ExternalBase("vm-export.example.test", ns, vme.Name)), fmt.Sprintf("%+v", l)
	})
}

// exportInSplitMode exports a claim on a split cluster: virt-controller
// (a process) runs the export controller, and its external link, served
// by virt-exportproxy (a process), answers with the token only.
func exportInSplitMode(ctx context.Context, t *testing.T, w *world) {
	t.Helper()
	e := exportClaim(ctx, t, w, "default", "split-exported", true)
	defer e.delete(ctx, t)
	ext := e.vme.Status.Links.External
	roots := x509.NewCertPool()
	assert.Assert(t, roots.AppendCertsFromPEM([]byte(ext.Cert)), "the external link's cert: %q", ext.Cert)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	defer hc.CloseIdleConnections()
	dir := e.dirLink(t, ext)
	expectStatus(ctx, t, hc, dir, e.token, http.StatusOK, "the listing through the proxy with the token")
	expectStatus(ctx, t, hc, dir, "", http.StatusUnauthorized, "the listing through the proxy without a token")
}
