package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
	"github.com/virtkit/virtkit/virtapi/subresources"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The binary installs itself (APIService, ExternalName Service, webhooks,
// ClusterRoles) and serves both the webhooks and the aggregated API on one
// port: a VM is defaulted by its mutating webhook, started through the
// aggregator (which /metrics counts), and deleted once the binary is gone.
func TestVirtAPIBinary(t *testing.T) {
	agg := kubeenv.NewAggregatedAPI(t, subresources.Group, subresources.Version)
	cp := kubeenv.ControlPlane(t, agg.ControlPlaneOption())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin, err := cp.Env.AddUser(envtest.User{Name: "virt-api", Groups: []string{"system:masters"}}, nil)
	must(t, err)
	kubeconfig, err := admin.KubeConfig()
	must(t, err)
	dir := testenv.Dir(t)
	kc := filepath.Join(dir, "kubeconfig")
	must(t, os.WriteFile(kc, kubeconfig, 0o600))
	bin := filepath.Join(dir, "virt-api")
	if b, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}

	agg.ReleasePort()
	port := strconv.Itoa(agg.Port)
	base := []string{"--kubeconfig", kc, "--listen", "127.0.0.1:" + port,
		"--tls-cert-file", agg.ServingCertFile, "--tls-private-key-file", agg.ServingKeyFile,
		"--requestheader-client-ca-file", agg.ClientCAFile, "--requestheader-allowed-names", kubeenv.FrontProxyClientName}
	// The node API is mutual TLS only: without virt-api's client
	// certificate for the handlers it does not start.
	var exit *exec.ExitError
	if b, err := exec.Command(bin, base...).CombinedOutput(); !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(b), "the node API speaks mutual TLS only") {
		t.Errorf("without the handler TLS flags: %v, %s", err, b)
	}
	handlerCA, handlerCert, handlerKey := handlerClientFiles(t, dir)
	cmd := exec.Command(bin, append(base, "--handler-ca-file", handlerCA, "--handler-client-cert-file", handlerCert, "--handler-client-key-file", handlerKey,
		"--install", "--external-name", "localhost", "--service-port", port, "--ca-bundle-file", agg.ServingCAFile)...)
	cmd.Env = append(os.Environ(), testenv.OwnerEnv+"="+strconv.Itoa(os.Getpid()))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	running := true
	stop := func() {
		if running {
			running = false
			_ = cmd.Process.Signal(os.Interrupt)
			_ = cmd.Wait()
		}
	}
	defer stop()
	defer func() {
		if t.Failed() {
			t.Logf("virt-api said:\n%s", out.String())
		}
	}()
	agg.Register(t, cp) // the objects exist already; this waits for Available

	c := cp.Client
	halted := virtv1.RunStrategyHalted
	vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm1"},
		Spec: virtv1.VirtualMachineSpec{RunStrategy: &halted, Template: &virtv1.VirtualMachineInstanceTemplateSpec{Spec: virtv1.VirtualMachineInstanceSpec{
			Domain: virtv1.DomainSpec{Resources: virtv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
				Devices: virtv1.Devices{Disks: []virtv1.Disk{{Name: "root"}}}},
			Volumes: []virtv1.Volume{{Name: "root", VolumeSource: virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "localhost/guest:1"}}}},
		}}}}
	must(t, c.Create(ctx, vm))
	must(t, c.Get(ctx, client.ObjectKeyFromObject(vm), vm))
	if m := vm.Spec.Template.Spec.Domain.Machine; m == nil || m.Type != "q35" {
		t.Errorf("the mutating webhook did not default the machine type: %+v", m)
	}

	hc, err := rest.HTTPClientFor(cp.Config)
	must(t, err)
	url := strings.TrimSuffix(cp.Config.Host, "/") + subresources.Prefix + "/namespaces/default/virtualmachines/vm1/start"
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, strings.NewReader("{}"))
	must(t, err)
	resp, err := hc.Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("start: %d", resp.StatusCode)
	}
	must(t, c.Get(ctx, client.ObjectKeyFromObject(vm), vm))
	if *vm.Spec.RunStrategy != virtv1.RunStrategyAlways {
		t.Errorf("runStrategy %s after start, want Always", *vm.Spec.RunStrategy)
	}

	// /metrics on the TLS port, as KubeVirt's: the start call, and the
	// requests virt-api made for it.
	pem, err := os.ReadFile(agg.ServingCAFile)
	must(t, err)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	scraper := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	testenv.WaitSeries(ctx, t, scraper, "https://127.0.0.1:"+port+"/metrics", nil,
		`virtkit_subresource_requests_total{code="202",resource="virtualmachines",subresource="start"} 1`,
		`kubevirt_rest_client_requests_total{code="201",component="virt-api",resource="subjectaccessreviews",verb="create"}`,
		`kubevirt_rest_client_requests_total{code="200",component="virt-api",resource="virtualmachines",verb="patch"}`,
	)

	stop()
	err = c.Create(ctx, &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm2"}, Spec: vm.Spec})
	if err == nil || !strings.Contains(err.Error(), "virtualmachines.kubevirt.io") {
		t.Errorf("create without virt-api: %v, want the webhook's failure", err)
	}
	if err := c.Delete(ctx, vm); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete without virt-api: %v", err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// handlerClientFiles writes a CA and virt-api's client certificate for the
// node handlers, and returns the CA, certificate and key files.
func handlerClientFiles(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	now := time.Now()
	ca, err := certs.NewCA("handlers-ca", now, 24*time.Hour)
	must(t, err)
	leaf, err := ca.Issue(certs.Request{CommonName: nodeapi.ClientName, Client: true, Validity: 24 * time.Hour}, now)
	must(t, err)
	caFile, certFile, keyFile = filepath.Join(dir, "handlers-ca.crt"), filepath.Join(dir, "handler-client.crt"), filepath.Join(dir, "handler-client.key")
	for file, b := range map[string][]byte{caFile: ca.CertPEM(), certFile: leaf.CertPEM(), keyFile: leaf.KeyPEM()} {
		must(t, os.WriteFile(file, b, 0o600))
	}
	return caFile, certFile, keyFile
}
