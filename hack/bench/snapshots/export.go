package main

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	exportv1 "kubevirt.io/api/export/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/hack/bench/internal/benchkit"
	"github.com/virtkit/virtkit/internal/localcluster"
	"github.com/virtkit/virtkit/virt/storage/export"
	exporttoken "github.com/virtkit/virtkit/virt/storage/export/token"
)

// exportDownloads times, runs times after a warm-up and alternating which
// goes first, curl downloading claim's disk raw through a
// VirtualMachineExport's external link (the export proxy on its loopback
// port, then the export server pod, TLS on both hops) and curl
// downloading the same file from a plain HTTPS file server in this
// process. Both write to /dev/null and read a file the page cache holds
// after the warm-up (warm on both sides).
func exportDownloads(ctx context.Context, c *localcluster.Cluster, claim, disk string, runs int) (exported, plain []time.Duration, err error) {
	cl := c.Client
	vme := &exportv1.VirtualMachineExport{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: claim + "-export"},
		Spec: exportv1.VirtualMachineExportSpec{Source: corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: claim}}}
	if err := cl.Create(ctx, vme); err != nil {
		return nil, nil, err
	}
	defer func() {
		if derr := cl.Delete(context.Background(), vme); derr != nil && err == nil {
			err = derr
		}
	}()
	if err := benchkit.Wait(ctx, "export "+vme.Name+" Ready", 50*time.Millisecond, func() (bool, error) {
		err := cl.Get(ctx, client.ObjectKeyFromObject(vme), vme)
		return err == nil && vme.Status != nil && vme.Status.Phase == exportv1.Ready && vme.Status.Links != nil && vme.Status.Links.External != nil, err
	}); err != nil {
		return nil, nil, err
	}
	ext := vme.Status.Links.External
	rawURL := ""
	for _, f := range ext.Volumes[0].Formats {
		if f.Format == exportv1.KubeVirtRaw {
			rawURL = f.Url
		}
	}
	tok := &corev1.Secret{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: *vme.Status.TokenSecretRef}, tok); err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "vkb-export-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	exportCA := filepath.Join(dir, "export-ca.pem")
	if err := os.WriteFile(exportCA, []byte(ext.Cert), 0o600); err != nil {
		return nil, nil, err
	}
	srv := httptest.NewUnstartedServer(http.FileServer(http.Dir(filepath.Dir(disk))))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	plainCA := filepath.Join(dir, "plain-ca.pem")
	if err := os.WriteFile(plainCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		return nil, nil, err
	}
	header := exporttoken.Header + ": " + string(tok.Data[exporttoken.Key])
	viaExport := func() (time.Duration, error) {
		return timedCurl(ctx, "--cacert", exportCA, "-H", header, rawURL)
	}
	// Where the export's time goes: the same download straight from the
	// server pod (one TLS hop, as the internal link inside a cluster).
	internalCA := filepath.Join(dir, "internal-ca.pem")
	if err := os.WriteFile(internalCA, []byte(vme.Status.Links.Internal.Cert), 0o600); err != nil {
		return nil, nil, err
	}
	pod := &corev1.Pod{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: export.PodName(vme.Name)}, pod); err != nil {
		return nil, nil, err
	}
	host := export.ServiceHost(namespace, vme.Name)
	direct := fmt.Sprintf("https://%s:%d%s", host, export.ServerPort, export.RawPath(claim))
	viaPod := func() (time.Duration, error) {
		return timedCurl(ctx, "--resolve", fmt.Sprintf("%s:%d:%s", host, export.ServerPort, pod.Status.PodIP),
			"--cacert", internalCA, "-H", header, direct)
	}
	viaPlain := func() (time.Duration, error) {
		return timedCurl(ctx, "--cacert", plainCA, srv.URL+"/"+filepath.Base(disk))
	}
	for i := 0; i <= runs; i++ {
		var e, p time.Duration
		if i%2 == 0 {
			if e, err = viaExport(); err == nil {
				p, err = viaPlain()
			}
		} else if p, err = viaPlain(); err == nil {
			e, err = viaExport()
		}
		if err != nil {
			return nil, nil, err
		}
		if i > 0 {
			exported, plain = append(exported, e), append(plain, p)
		}
		d, err := viaPod()
		if err != nil {
			return nil, nil, err
		}
		fmt.Printf("export run %d: through the export %s (straight from the server pod %s), plain curl %s\n",
			i, e.Round(time.Millisecond), d.Round(time.Millisecond), p.Round(time.Millisecond))
	}
	return exported, plain, nil
}

// timedCurl times curl downloading to /dev/null.
func timedCurl(ctx context.Context, args ...string) (time.Duration, error) {
	start := time.Now()
	out, err := exec.CommandContext(ctx, "curl", append([]string{"-sS", "--fail", "-o", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("curl %v: %v: %s", args, err, out)
	}
	return time.Since(start), nil
}
