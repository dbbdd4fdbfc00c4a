package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	conditionsv1 "github.com/openshift/custom-resource-status/conditions/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	sdkapi "kubevirt.io/controller-lifecycle-operator-sdk/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/internal/testenv"
)

// TestDataVolumeUpload is the upload proof: `virtctl image-upload`
// creates a DataVolume with an upload source, waits for its upload pod,
// takes a token from the upload.cdi.kubevirt.io API and posts the test
// guest's qcow2 disk to the upload proxy (virt-api's loopback port, which
// the CDIConfig's status names, as the CDI resource sets it); the
// DataVolume Succeeds and a VM boots from it. Before that, a corrupt image
// is refused with the importer's words and the DataVolume stays ready for
// a good one; a request without a valid token is refused. Deleting the VM
// and the DataVolume leaves no pod, Secret, claim or folder. `virtctl
// image-upload pvc` fills a bare claim with the same disk.
func TestDataVolumeUpload(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	const ns = "default"
	proxy := "https://127.0.0.1:" + strconv.Itoa(w.cfg.VirtAPIPort)
	upload := func(image string, extra ...string) (string, error) {
		return w.tryVirtctl(ctx, t, append([]string{"image-upload", "dv", "uploaded", "--image-path", image, "--insecure", "-n", ns}, extra...)...)
	}

	// xz's magic, then nothing xz can read.
	corrupt := filepath.Join(t.TempDir(), "corrupt.xz")
	must(t, os.WriteFile(corrupt, append([]byte{0xfd, '7', 'z', 'X', 'Z', 0}, bytes.Repeat([]byte("not xz"), 1000)...), 0o600))
	out, err := upload(corrupt, "--size", "64Mi", "--retry", "1", "--uploadproxy-url", proxy)
	if err == nil || !strings.Contains(out, "unexpected return value 400") || !strings.Contains(out, "corrupt") {
		t.Fatalf("uploading a corrupt image: %v, want a 400 saying it is corrupt", err)
	}
	key := client.ObjectKey{Namespace: ns, Name: "uploaded"}
	w.waitDV(ctx, t, key, "UploadReady after the refused upload", func(dv *cdiv1.DataVolume) bool { return dv.Status.Phase == cdiv1.UploadReady })

	// Only a token from the API opens the proxy.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, proxy+"/v1beta1/upload", strings.NewReader("x"))
	must(t, err)
	req.Header.Set("Authorization", "Bearer vkup1.e30.AAAA")
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the test's own proxy
	resp, err := hc.Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("upload with a forged token: %d, want 401", resp.StatusCode)
	}

	// Without --uploadproxy-url: the CDIConfig says where the proxy is, by
	// default virt-controller's --upload-proxy-url; configured, as CDI's
	// documentation says, in the CDI resource's spec.config (here another
	// name of the same address).
	cfg := &cdiv1.CDIConfig{}
	must(t, w.c.Get(ctx, client.ObjectKey{Name: "config"}, cfg))
	if cfg.Status.UploadProxyURL == nil || *cfg.Status.UploadProxyURL != proxy {
		t.Errorf("CDIConfig status.uploadProxyURL %v, want %s", cfg.Status.UploadProxyURL, proxy)
	}
	cdi := &cdiv1.CDI{}
	testenv.Eventually(ctx, t, "the CDI resource cdi Available", func() (bool, string) {
		if err := w.c.Get(ctx, client.ObjectKey{Name: "cdi"}, cdi); err != nil {
			return false, err.Error()
		}
		return cdi.Status.Phase == sdkapi.PhaseDeployed && conditionsv1.IsStatusConditionTrue(cdi.Status.Conditions, conditionsv1.ConditionAvailable), fmt.Sprintf("%+v", cdi.Status)
	})
	byName := "https://localhost:" + strconv.Itoa(w.cfg.VirtAPIPort)
	setOverride := func(ctx context.Context, v string) error {
		return w.c.Patch(ctx, &cdiv1.CDI{ObjectMeta: metav1.ObjectMeta{Name: "cdi"}},
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"config":{"uploadProxyURLOverride":`+v+`}}}`)))
	}
	must(t, setOverride(ctx, strconv.Quote(byName)))
	t.Cleanup(func() {
		if err := setOverride(context.Background(), "null"); err != nil {
			t.Errorf("removing the upload proxy override: %v", err)
		}
	})
	testenv.Eventually(ctx, t, "the CDIConfig following the CDI resource", func() (bool, string) {
		if err := w.c.Get(ctx, client.ObjectKey{Name: "config"}, cfg); err != nil {
			return false, err.Error()
		}
		return cfg.Status.UploadProxyURL != nil && *cfg.Status.UploadProxyURL == byName, fmt.Sprintf("spec %+v, status %+v", cfg.Spec, cfg.Status)
	})
	out, err = upload(testenv.Output(t, "guest", "disk.qcow2"), "--no-create")
	if err != nil || !strings.Contains(out, "completed successfully") {
		t.Fatalf("uploading the guest's disk: %v", err)
	}
	dv := w.waitDV(ctx, t, key, "Succeeded", func(dv *cdiv1.DataVolume) bool { return dv.Status.Phase == cdiv1.Succeeded })
	if c := dvCondition(dv, cdiv1.DataVolumeRunning); c.Message != "Upload Complete" {
		t.Errorf("Running condition %+v, want Upload Complete", c)
	}

	// Into a bare claim, as `image-upload pvc`: the same disk.
	out, err = w.tryVirtctl(ctx, t, "image-upload", "pvc", "bare", "--size", "64Mi", "--image-path", testenv.Output(t, "guest", "disk.qcow2"), "--insecure", "-n", ns)
	if err != nil || !strings.Contains(out, "completed successfully") {
		t.Fatalf("uploading into a bare claim: %v", err)
	}
	if a, b := w.claimBytes(ctx, t, ns, "uploaded"), w.claimBytes(ctx, t, ns, "bare"); len(b) < 1<<20 || !bytes.Equal(a[:1<<20], b[:1<<20]) {
		t.Errorf("the bare claim's disk (%d bytes) does not start as the DataVolume's (%d bytes)", len(b), len(a))
	}

	vm := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
	vm.Name = "uploaded"
	sp := &vm.Spec.Template.Spec
	for i := range sp.Volumes {
		if sp.Volumes[i].ContainerDisk != nil {
			sp.Volumes[i].VolumeSource = virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: "uploaded"}}
		}
	}
	must(t, w.c.Create(ctx, vm))
	vmi := w.waitRunning(ctx, t, vm)
	waitFile(ctx, t, w.serialLog(ctx, t, vmi), "hello from uploaded")

	must(t, w.c.Delete(ctx, vm))
	w.waitNoVMI(ctx, t, vm)
	must(t, w.c.Delete(ctx, &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "uploaded"}}))
	must(t, w.c.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bare"}}))
	w.waitNothingLeft(ctx, t, ns)
}
