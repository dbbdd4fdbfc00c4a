package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	exportv1 "kubevirt.io/api/export/v1beta1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/virt/storage/export"
	exporttoken "github.com/virtkit/virtkit/virt/storage/export/token"
)

// TestVirtualMachineExport is the export proof for a claim, on the local
// node: a DataVolume imports a disk carrying a marker; a
// VirtualMachineExport of its claim gets a server pod (virt-exportserver,
// as a process, the claim mounted read-only, a certificate from the
// export CA) and goes Ready with KubeVirt's internal and external links;
// through the external link (the export proxy on its loopback port, its
// certificate the link's) the disk downloads as gzip and as raw ranges
// with the export's token, and not without it; the auth-header Secret
// manifest carries the token. A pod that takes the claim pauses the export
// (InUse); deleting the export removes its pod, Service and Secrets.
// Then `virtctl vmexport download --pvc --format=raw` makes an export of
// its own, downloads the disk and deletes what it made.
func TestVirtualMachineExport(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	const ns = "default"
	s := startImageServer(t)
	disk := markedDisk(7, 8<<20)
	s.put("seven.raw.gz", gzipOf(t, disk))
	w.importSecrets(ctx, t, ns, s)
	must(t, w.c.Create(ctx, &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "seven"}, Spec: httpSpec(s, "seven.raw.gz", "16Mi")}))
	w.waitDV(ctx, t, client.ObjectKey{Namespace: ns, Name: "seven"}, "Succeeded", func(dv *cdiv1.DataVolume) bool { return dv.Status.Phase == cdiv1.Succeeded })

	vme := &exportv1.VirtualMachineExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "seven-export"},
		Spec: exportv1.VirtualMachineExportSpec{Source: corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "seven"}}}
	must(t, w.c.Create(ctx, vme))
	waitExport := func(what string, ok func(*exportv1.VirtualMachineExportStatus) bool) {
		t.Helper()
		eventually(ctx, t, "export "+what, func() (bool, string) {
			if err := w.c.Get(ctx, client.ObjectKeyFromObject(vme), vme); err != nil {
				return false, err.Error()
			}
			return vme.Status != nil && ok(vme.Status), fmt.Sprintf("%+v", vme.Status)
		})
	}
	waitExport("Ready with external links", func(st *exportv1.VirtualMachineExportStatus) bool {
		return st.Phase == exportv1.Ready && st.Links != nil && st.Links.External != nil && st.Links.Internal != nil
	})
	ext := vme.Status.Links.External
	if len(ext.Volumes) != 1 || ext.Volumes[0].Name != "seven" || len(ext.Volumes[0].Formats) != 2 {
		t.Fatalf("external volume links: %+v", ext.Volumes)
	}
	tok := &corev1.Secret{}
	must(t, w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: *vme.Status.TokenSecretRef}, tok))
	token := string(tok.Data["token"])

	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(ext.Cert)) {
		t.Fatalf("the external link's cert is no PEM certificate: %q", ext.Cert)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	get := func(url, tok string, header ...string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		must(t, err)
		if tok != "" {
			req.Header.Set(exporttoken.Header, tok)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := hc.Do(req)
		must(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		must(t, err)
		return resp.StatusCode, b
	}
	urlOf := func(f exportv1.ExportVolumeFormat) string {
		for _, x := range ext.Volumes[0].Formats {
			if x.Format == f {
				return x.Url
			}
		}
		t.Fatalf("no %s link in %+v", f, ext.Volumes[0].Formats)
		return ""
	}
	code, gz := get(urlOf(exportv1.KubeVirtGz), token)
	if code != http.StatusOK {
		t.Fatalf("gzip download: %d", code)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	must(t, err)
	plain, err := io.ReadAll(zr)
	must(t, err)
	if len(plain) < len(disk) || !bytes.Equal(plain[:len(disk)], disk) || len(bytes.Trim(plain[len(disk):], "\x00")) != 0 {
		t.Errorf("the downloaded disk (%d bytes) is not the imported one (%d bytes, zeros after)", len(plain), len(disk))
	}
	if code, b := get(urlOf(exportv1.KubeVirtRaw), token, "Range", "bytes=0-15"); code != http.StatusPartialContent || string(b) != "VIRTKIT-DATA n=7" {
		t.Errorf("raw range: %d %q, want 206 and the marker", code, b)
	}
	if code, b := get(urlOf(exportv1.KubeVirtGz), ""); code != http.StatusUnauthorized || len(b) != 0 {
		t.Errorf("download without the token: %d (%d bytes), want 401 and nothing", code, len(b))
	}
	for _, m := range ext.Manifests {
		if m.Type == exportv1.AuthHeader {
			if code, b := get(m.Url, token, "Accept", "application/yaml"); code != http.StatusOK || !bytes.Contains(b, []byte("x-kubevirt-export-token:"+token)) {
				t.Errorf("auth-header manifest: %d %q", code, b)
			}
		}
	}

	// A pod taking the claim pauses the export.
	user := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "claim-user"}, Spec: corev1.PodSpec{
		NodeName:   "does-not-exist",
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		Volumes:    []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "seven"}}}}}}
	must(t, w.c.Create(ctx, user))
	waitExport("paused, the claim in use", func(st *exportv1.VirtualMachineExportStatus) bool {
		for _, c := range st.Conditions {
			if c.Type == exportv1.ConditionReady && c.Reason == "InUse" {
				return st.Phase == exportv1.Pending
			}
		}
		return false
	})
	must(t, w.c.Delete(ctx, user, client.GracePeriodSeconds(0)))

	must(t, w.c.Delete(ctx, vme))
	eventually(ctx, t, "the export's pod, Service and Secrets gone", func() (bool, string) {
		left := []string{}
		for _, o := range []client.Object{
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: export.PodName(vme.Name)}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: export.ServiceName(vme.Name)}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: export.TokenSecretName(vme.Name)}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: export.CertSecretName(vme.Name)}},
		} {
			if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.GetName()}, o); !apierrors.IsNotFound(err) {
				left = append(left, fmt.Sprintf("%T %s", o, o.GetName()))
			}
		}
		return len(left) == 0, fmt.Sprint(left)
	})

	// KubeVirt's virtctl flow: create the export with its own token
	// Secret, wait, download gzip through the external link and
	// decompress (--format=raw), delete the export it made.
	out := filepath.Join(t.TempDir(), "disk.img")
	args := []string{"vmexport", "download", "by-virtctl", "--pvc=seven", "--output=" + out, "--format=raw", "-n", ns, "--kubeconfig", w.kubeconfig}
	cmdOut, err := exec.CommandContext(ctx, testenv.Output(t, "bin", "virtctl"), args...).CombinedOutput()
	t.Logf("virtctl %s:\n%s", strings.Join(args, " "), cmdOut)
	must(t, err)
	got, err := os.ReadFile(out)
	must(t, err)
	if len(got) < len(disk) || !bytes.Equal(got[:len(disk)], disk) {
		t.Errorf("virtctl's download (%d bytes) is not the imported disk", len(got))
	}
	eventually(ctx, t, "virtctl's export and its token Secret gone", func() (bool, string) {
		verr := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "by-virtctl"}, &exportv1.VirtualMachineExport{})
		serr := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "secret-by-virtctl"}, &corev1.Secret{})
		return apierrors.IsNotFound(verr) && apierrors.IsNotFound(serr), fmt.Sprintf("export: %v, Secret: %v", verr, serr)
	})

	must(t, w.c.Delete(ctx, &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "seven"}}))
	w.waitNothingLeft(ctx, t, ns)
}
