package controlplane_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/local/controlplane"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  controlplane.Config
		want string
	}{
		{controlplane.Config{BinDir: "/x"}, "Config.DataDir: required"},
		{controlplane.Config{DataDir: t.TempDir()}, "Config.BinDir: required"},
		{controlplane.Config{DataDir: t.TempDir(), BinDir: t.TempDir()}, "etcd: stat"},
		{controlplane.Config{DataDir: t.TempDir(), BinDir: "/x", ServiceCIDR: "10.96/16"}, `Config.ServiceCIDR "10.96/16"`},
	} {
		_, err := controlplane.Start(context.Background(), tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%+v) = %v, want an error with %q", tc.cfg, err, tc.want)
		}
	}
}

// TestControlPlane starts the real binaries, checks that each does its job
// (the apiserver stores, the controller-manager runs controllers, the
// scheduler binds), that a killed process comes back, and that a second
// start on the same data directory finds the cluster as it was.
func TestControlPlane(t *testing.T) {
	testenv.Integration(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	base := testenv.FreePorts(t, 4)
	cfg := controlplane.Config{DataDir: filepath.Join(testenv.Dir(t), "data"), BinDir: testenv.Output(t, "bin"),
		APIServerPort: base, EtcdPort: base + 1, Logger: testr.New(t)}

	cp, err := controlplane.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped && cp != nil {
			_ = cp.Stop()
		}
	}()
	cs := clientset(t, cp)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The controller-manager: a Deployment gets a ReplicaSet and a pod,
	// and the namespace its default service account.
	one := int32(1)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "kept"},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example/web:1"}}}}}}
	if _, err := cs.AppsV1().Deployments("kept").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The scheduler: a ready node to bind the pod to.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	node, err = cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status = corev1.NodeStatus{
		Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: mustQ("4"), corev1.ResourceMemory: mustQ("8Gi"), corev1.ResourcePods: mustQ("10")},
		Capacity:    corev1.ResourceList{corev1.ResourceCPU: mustQ("4"), corev1.ResourceMemory: mustQ("8Gi"), corev1.ResourcePods: mustQ("10")},
	}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(ctx, t, "the Deployment's pod bound to n1 and the default service account", func() (bool, string) {
		pods, err := cs.CoreV1().Pods("kept").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		_, saErr := cs.CoreV1().ServiceAccounts("kept").Get(ctx, "default", metav1.GetOptions{})
		if len(pods.Items) != 1 || pods.Items[0].Spec.NodeName != "n1" || saErr != nil {
			return false, fmt.Sprintf("%d pods, service account: %v", len(pods.Items), saErr)
		}
		return true, ""
	})

	// A serving certificate for a server the apiserver calls, from the cluster CA.
	pki := cp.Config().PKI()
	if err := pki.EnsureServingCert("virt-api", "virt-api.kubevirt.svc"); err != nil {
		t.Fatal(err)
	}
	verifyServing(t, pki, "virt-api", "virt-api.kubevirt.svc")

	// A killed scheduler is restarted.
	pid := findPID(t, "kube-scheduler", cfg.DataDir)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(ctx, t, "kube-scheduler restarted", func() (bool, string) {
		st := cp.Status()["kube-scheduler"]
		return st.Running && st.Restarts == 1, fmt.Sprintf("%+v", st)
	})

	if err := cp.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if _, err := os.Stat(cfg.AdminKubeconfig()); err != nil {
		t.Fatalf("the admin kubeconfig is gone after stop: %v", err)
	}

	// Started again on the same data: same CA, the namespace is still there.
	cp2, err := controlplane.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cp2.Stop(); err != nil {
			t.Error(err)
		}
	}()
	if _, err := clientset(t, cp2).CoreV1().Namespaces().Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("namespace after restart: %v", err)
	}
}

func clientset(t *testing.T, cp *controlplane.ControlPlane) *kubernetes.Clientset {
	t.Helper()
	rc, err := cp.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(rc)
}

// findPID finds the process running bin with dataDir in its arguments.
func findPID(t *testing.T, bin, dataDir string) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmd), "\x00")
		if filepath.Base(args[0]) == bin && strings.Contains(string(cmd), dataDir) {
			return pid
		}
	}
	t.Fatalf("no %s process for %s", bin, dataDir)
	return 0
}

func mustQ(s string) resource.Quantity { return resource.MustParse(s) }

func verifyServing(t *testing.T, pki controlplane.PKI, name, dns string) {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(pki.Cert(name), pki.Key(name))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(pki.CACert())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: dns, Roots: roots}); err != nil {
		t.Errorf("%s certificate for %s: %v", name, dns, err)
	}
}
