package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
	"github.com/virtkit/virtkit/virtapi/frontproxy"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
	"github.com/virtkit/virtkit/virtapi/subresources"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// world is a real apiserver whose aggregator serves subresources.kubevirt.io
// from this process (as virtapi/subresources/env_test.go builds it), and the virtctl
// binary. Node "node-a" runs a handler (nodeapi.Server over a Fake whose
// console and VNC echo). alice may use virtctl in namespaces default and
// team (the subresources edit ClusterRole, plus reading VMs and claims and
// deleting migrations, as KubeVirt's kubevirt.io:edit grants); bob has no
// RBAC at all.
type world struct {
	c       client.Client // cluster admin: creates objects, plays the controllers and the handler
	node    *nodeapi.Fake
	dir     string
	bin     string // the virtctl binary
	alice   string // kubeconfig files
	bob     string
	aliceNS string // alice's, with context namespace "team"
}

func newWorld(t *testing.T) *world {
	t.Helper()
	testenv.Integration(t)
	dir := testenv.Dir(t)
	w := &world{node: nodeapi.NewFake(), dir: dir, bin: filepath.Join(dir, "virtctl")}
	if b, err := exec.Command("go", "build", "-o", w.bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	agg := kubeenv.NewAggregatedAPI(t, subresources.Group, subresources.Version)
	cp := kubeenv.ControlPlane(t, agg.ControlPlaneOption())
	w.c = cp.Client
	ctx := context.Background()

	handler := httptest.NewTLSServer(nodeapi.NewServer(w.node))
	t.Cleanup(handler.Close)
	must(t, w.c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a",
		Annotations: map[string]string{nodeapi.HandlerAddressAnnotation: handler.URL}}}))
	locator := nodeapi.NewAnnotationLocator(w.c, nodeapi.WithTLSConfig(handler.Client().Transport.(*http.Transport).TLSClientConfig))
	agg.Serve(t, cp, subresources.New(w.c,
		subresources.WithAuthenticator(&frontproxy.Authenticator{ClientCA: agg.ClientCA, AllowedNames: agg.AllowedNames}),
		subresources.WithLocator(locator),
		subresources.WithVersion(subresources.VersionInfo{GitVersion: "v9.9.9-test"})))

	must(t, w.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}))
	roles, binding := subresources.RBAC()
	for _, r := range roles {
		must(t, w.c.Create(ctx, r))
	}
	must(t, w.c.Create(ctx, binding))
	must(t, w.c.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "vm-user"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"kubevirt.io"}, Resources: []string{"virtualmachines", "virtualmachineinstances"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"kubevirt.io"}, Resources: []string{"virtualmachineinstancemigrations"}, Verbs: []string{"get", "list", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get"}},
	}}))
	for _, ns := range []string{"default", "team"} {
		for _, role := range []string{subresources.EditClusterRoleName, subresources.MigrateClusterRoleName, "vm-user"} {
			must(t, w.c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "alice-"},
				RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
				Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "alice"}}}))
		}
	}
	for _, u := range []struct {
		name, ns string
		path     *string
	}{{"alice", "", &w.alice}, {"bob", "", &w.bob}, {"alice", "team", &w.aliceNS}} {
		au, err := cp.Env.AddUser(envtest.User{Name: u.name, Groups: []string{"tenants"}}, nil)
		must(t, err)
		b, err := au.KubeConfig()
		must(t, err)
		cfg, err := clientcmd.Load(b)
		must(t, err)
		if u.ns != "" {
			cfg.Contexts[cfg.CurrentContext].Namespace = u.ns
		}
		*u.path = filepath.Join(dir, u.name+"-"+u.ns+".kubeconfig")
		must(t, clientcmd.WriteToFile(*cfg, *u.path))
	}
	return w
}

// command returns virtctl with args, run as the user of kubeconfig (through
// $KUBECONFIG, with HOME empty so ~/.kube/config plays no part).
func (w *world) command(kubeconfig string, args ...string) *exec.Cmd {
	cmd := exec.Command(w.bin, args...)
	env := []string{"HOME=" + w.dir, "KUBECONFIG=" + kubeconfig, testenv.OwnerEnv + "=" + strconv.Itoa(os.Getpid())}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "KUBECONFIG=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	return cmd
}

// virtctl runs virtctl to its end and returns its exit code and output.
func (w *world) virtctl(t *testing.T, kubeconfig string, args ...string) (int, string, string) {
	t.Helper()
	cmd := w.command(kubeconfig, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	must(t, cmd.Start())
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("virtctl %v did not end within a minute; stderr:\n%s", args, stderr.String())
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

func template() *virtv1.VirtualMachineInstanceTemplateSpec {
	return &virtv1.VirtualMachineInstanceTemplateSpec{Spec: vmiSpec()}
}

func vmiSpec() virtv1.VirtualMachineInstanceSpec {
	return virtv1.VirtualMachineInstanceSpec{
		Domain: virtv1.DomainSpec{
			Resources: virtv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
			Devices: virtv1.Devices{Disks: []virtv1.Disk{{Name: "root",
				DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusVirtio}}}}},
		},
		Volumes: []virtv1.Volume{{Name: "root", VolumeSource: virtv1.VolumeSource{
			ContainerDisk: &virtv1.ContainerDiskSource{Image: "localhost/guest:1"}}}},
	}
}

// createVM creates a VM with run strategy rs in namespace ns.
func (w *world) createVM(t *testing.T, ns, name string, rs virtv1.VirtualMachineRunStrategy) {
	t.Helper()
	must(t, w.c.Create(context.Background(), &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: virtv1.VirtualMachineSpec{RunStrategy: &rs, Template: template()}}))
}

// runVMI creates a VMI in namespace default in phase, on node-a when
// Running, as the controllers and the handler would.
func (w *world) runVMI(t *testing.T, name string, phase virtv1.VirtualMachineInstancePhase) *virtv1.VirtualMachineInstance {
	t.Helper()
	ctx := context.Background()
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: vmiSpec()}
	must(t, w.c.Create(ctx, vmi))
	vmi.Status = virtv1.VirtualMachineInstanceStatus{Phase: phase}
	if phase == virtv1.Running {
		vmi.Status.NodeName = "node-a"
		w.node.Set("default", name, nodeapi.FakeVMI{})
	}
	must(t, w.c.Status().Update(ctx, vmi))
	return vmi
}

func (w *world) getVM(t *testing.T, ns, name string) *virtv1.VirtualMachine {
	t.Helper()
	vm := &virtv1.VirtualMachine{}
	must(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, vm))
	return vm
}

func (w *world) getVMI(t *testing.T, name string) *virtv1.VirtualMachineInstance {
	t.Helper()
	vmi := &virtv1.VirtualMachineInstance{}
	must(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, vmi))
	return vmi
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
