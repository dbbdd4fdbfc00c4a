package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The binary starts against a real apiserver, publishes its node API on
// its Node, answers it, serves its /metrics, and stops cleanly on SIGTERM. (What it does with
// VMIs is controllers/handler's, tested there on real launchers.)
func TestVirtHandlerBinary(t *testing.T) {
	cp := kubeenv.ControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	must(t, cp.Client.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}))
	admin, err := cp.Env.AddUser(envtest.User{Name: "virt-handler", Groups: []string{"system:masters"}}, nil)
	must(t, err)
	kubeconfig, err := admin.KubeConfig()
	must(t, err)
	dir := testenv.Dir(t)
	kcPath := filepath.Join(dir, "kubeconfig")
	must(t, os.WriteFile(kcPath, kubeconfig, 0o600))
	bin := filepath.Join(dir, "virt-handler")
	if b, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}

	// Without a node name it refuses to start.
	out, err := exec.Command(bin, "--node-name", "").CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "--node-name") {
		t.Errorf("without --node-name: exit %d, %s", code, out)
	}

	// A peer's pods folder must be NODE=DIR, DIR absolute.
	out, err = exec.Command(bin, "--node-name", "node-1", "--peer-pods-dir", "node-2=pods").CombinedOutput()
	if code := exitCode(err); code != 2 || !strings.Contains(string(out), `"node-2=pods": want NODE=DIR, DIR absolute`) {
		t.Errorf("relative --peer-pods-dir: exit %d, %s", code, out)
	}
	pki := nodePKI(t, dir)
	tlsFlags := []string{"--tls-cert-file", pki.serverCert, "--tls-key-file", pki.serverKey, "--client-ca-file", pki.caFile}
	// Peers' pods folders are for the same-machine shortcut only; a
	// migration port must be reachable at a host; the migration
	// certificate's files go together.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--peer-pods-dir", "node-2=/pods"}, "--peer-pods-dir goes with --local-migration"},
		{[]string{"--migration-address", ":8185"}, "--migration-advertise-host: required when --migration-address"},
		// An interface of the migration network without a global address
		// (the loopback's 127.0.0.1 is no address for other nodes).
		{[]string{"--migration-address", ":8185", "--migration-interface", "lo"},
			"--migration-interface: migration network: interface lo has no global unicast address"},
		{[]string{"--migration-cert-file", pki.serverCert}, "--migration-cert-file, --migration-key-file and --migration-ca-file go together"},
		{[]string{"--migration-cert-signer", certs.NodeSigner, "--migration-cert-file", pki.serverCert, "--migration-ca-file", pki.caFile},
			"--migration-cert-signer goes with --migration-ca-file, without --migration-cert-file"},
	} {
		cmd := exec.Command(bin, append([]string{"--node-name", "node-1", "--node-api-address", "0"}, tc.args...)...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kcPath)
		out, err := cmd.CombinedOutput()
		if code := exitCode(err); code != 1 || !strings.Contains(string(out), tc.want) {
			t.Errorf("%q: exit %d, %s", tc.args, code, out)
		}
	}

	// Without its certificates it refuses to serve the node API at all.
	out, err = exec.Command(bin, "--node-name", "node-1").CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "the node API speaks mutual TLS only") {
		t.Errorf("without TLS flags: exit %d, %s", code, out)
	}

	addr, metricsAddr, migAddr := freeAddress(t), freeAddress(t), freeAddress(t)
	migCert, migKey := pki.node(t, "node-1", dir)
	cmd := exec.Command(bin, append([]string{"--node-name", "node-1", "--emulation",
		"--pods-dir", filepath.Join(dir, "pods"), "--state-dir", filepath.Join(dir, "state"),
		"--node-api-address", addr, "--advertise-address", "https://" + addr, "--health-probe-bind-address", "0", "--device-plugin-dir", "0",
		"--migration-address", migAddr, "--migration-cert-file", migCert, "--migration-key-file", migKey, "--migration-ca-file", pki.caFile,
		"--metrics-bind-address", metricsAddr}, tlsFlags...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kcPath, testenv.OwnerEnv+"="+strconv.Itoa(os.Getpid()))
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	must(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-done
	}()

	testenv.Eventually(ctx, t, "the handler to publish its address", func() (bool, string) {
		var n corev1.Node
		must(t, cp.Client.Get(ctx, client.ObjectKey{Name: "node-1"}, &n))
		return n.Annotations[nodeapi.HandlerAddressAnnotation] == "https://"+addr && n.Labels[virtv1.NodeSchedulable] == "true" &&
			n.Annotations[virtv1.VirtHandlerHeartbeat] != "", "it said:\n" + logs.String()
	})
	u, err := url.Parse("https://" + addr)
	must(t, err)
	// virt-api's certificate, checking the handler's name: the node
	// answers. Anyone else is refused before a verb is read.
	c := nodeapi.NewClient(nodeapi.Endpoint{URL: u, TLS: pki.client(t, nodeapi.ClientName)})
	if err := c.Pause(ctx, "default", "nothing"); !errors.Is(err, nodeapi.ErrNotFound) {
		t.Errorf("pause of a VMI the node does not run: %v, want ErrNotFound", err)
	}
	for what, tc := range map[string]*tls.Config{
		"another name of the same CA": pki.client(t, "virt-local-admin"),
		"no client certificate":       {RootCAs: pki.pool, ServerName: nodeapi.ServerName("kubevirt"), MinVersion: tls.VersionTLS12},
	} {
		err := nodeapi.NewClient(nodeapi.Endpoint{URL: u, TLS: tc}).Pause(ctx, "default", "nothing")
		if !errors.Is(err, nodeapi.ErrUnavailable) || errors.Is(err, nodeapi.ErrNotFound) {
			t.Errorf("%s: %v, want the handshake refused", what, err)
		}
	}
	plain, err := url.Parse("http://" + addr)
	must(t, err)
	if err := nodeapi.NewClient(nodeapi.Endpoint{URL: plain}).Pause(ctx, "default", "nothing"); !errors.Is(err, nodeapi.ErrInsecure) {
		t.Errorf("an http:// endpoint: %v, want ErrInsecure", err)
	}

	// /metrics: the handler's reconciles of a VMI scheduled to its node
	// (whose launcher never comes), its workqueue and its requests. The
	// per-guest series need a launcher: controllers/handler's tests and the
	// e2e test show them.
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "waits"},
		Spec: virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{
			Resources: virtv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}}}}}
	must(t, cp.Client.Create(ctx, vmi))
	vmi.Status = virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Scheduled, NodeName: "node-1"}
	must(t, cp.Client.Status().Update(ctx, vmi))
	testenv.WaitSeries(ctx, t, nil, "http://"+metricsAddr+"/metrics", logs.String,
		`controller_runtime_reconcile_total{controller="virt-handler",result="requeue_after"}`,
		`controller_runtime_reconcile_time_seconds_count{controller="virt-handler"}`,
		`workqueue_depth{controller="virt-handler",name="virt-handler",priority=`,
		// Two node patches: the node API's address, and the first heartbeat
		// (the next is a minute later).
		`kubevirt_rest_client_requests_total{code="200",component="virt-handler",resource="nodes",verb="patch"} 2`,
		`kubevirt_rest_client_requests_total{code="200",component="virt-handler",resource="virtualmachineinstances",verb="watch"}`,
	)

	// Its migration port speaks TLS as node-1, and refuses a hello of a
	// migration it does not have.
	peerCert, peerKey := pki.node(t, "node-2", dir)
	pair, err := tls.LoadX509KeyPair(peerCert, peerKey)
	must(t, err)
	mc, err := tls.Dial("tcp", migAddr, &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pki.pool,
		ServerName: certs.NodeName("node-1"), MinVersion: tls.VersionTLS12})
	must(t, err)
	_, err = io.WriteString(mc, `{"version":1,"namespace":"default","name":"nobody","vmi":"u1","migration":"m1","channel":"memory"}`+"\n")
	must(t, err)
	_ = mc.SetReadDeadline(time.Now().Add(30 * time.Second))
	reply, err := bufio.NewReader(mc).ReadString('\n')
	must(t, err)
	if !strings.Contains(reply, "VirtualMachineInstance default/nobody is not there") {
		t.Errorf("the migration port's reply: %q", reply)
	}
	mc.Close()

	must(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit after SIGTERM:\n%s", logs.String())
	}
	done <- nil // for the deferred wait
}

func freeAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// testPKI is a cluster's CA with a handler's serving certificate in files.
type testPKI struct {
	ca                            *certs.Pair
	pool                          *x509.CertPool
	caFile, serverCert, serverKey string
}

func nodePKI(t *testing.T, dir string) *testPKI {
	t.Helper()
	now := time.Now()
	ca, err := certs.NewCA("test-ca", now, 24*time.Hour)
	must(t, err)
	server, err := ca.Issue(certs.Request{CommonName: "virt-handler", DNSNames: []string{nodeapi.ServerName("kubevirt")}, Server: true, Validity: 24 * time.Hour}, now)
	must(t, err)
	p := &testPKI{ca: ca, pool: x509.NewCertPool(), caFile: filepath.Join(dir, "ca.crt"),
		serverCert: filepath.Join(dir, "tls.crt"), serverKey: filepath.Join(dir, "tls.key")}
	p.pool.AddCert(ca.Cert)
	for file, b := range map[string][]byte{p.caFile: ca.CertPEM(), p.serverCert: server.CertPEM(), p.serverKey: server.KeyPEM()} {
		must(t, os.WriteFile(file, b, 0o600))
	}
	return p
}

// node issues node's migration certificate into dir and returns its files.
func (p *testPKI) node(t *testing.T, node, dir string) (cert, key string) {
	t.Helper()
	leaf, err := p.ca.Issue(certs.NodeRequest(node, 24*time.Hour), time.Now())
	must(t, err)
	cert, key = filepath.Join(dir, node+"-migration.crt"), filepath.Join(dir, node+"-migration.key")
	must(t, os.WriteFile(cert, leaf.CertPEM(), 0o600))
	must(t, os.WriteFile(key, leaf.KeyPEM(), 0o600))
	return cert, key
}

// client is a client TLS configuration with a certificate named cn.
func (p *testPKI) client(t *testing.T, cn string) *tls.Config {
	t.Helper()
	leaf, err := p.ca.Issue(certs.Request{CommonName: cn, Client: true, Validity: 24 * time.Hour}, time.Now())
	must(t, err)
	pair, err := tls.X509KeyPair(leaf.CertPEM(), leaf.KeyPEM())
	must(t, err)
	return &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: p.pool, ServerName: nodeapi.ServerName("kubevirt"), MinVersion: tls.VersionTLS12}
}
