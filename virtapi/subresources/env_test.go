package subresources_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
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
// from this process; node "node-a" runs a handler (nodeapi.Server over a
// Fake) that the API finds through the node's annotation; "node-b" has none.
// alice may call every verb in namespace default, bob none.
type world struct {
	cp    *kubeenv.ControlPlaneEnv
	agg   *kubeenv.AggregatedAPI
	c     client.Client // cluster admin: plays the user creating objects, the controllers and the handler
	node  *nodeapi.Fake
	alice *rest.Config // bound to the subresources edit ClusterRole in namespace default
	bob   *rest.Config // has no RBAC at all
}

func newWorld(t *testing.T) *world {
	t.Helper()
	agg := kubeenv.NewAggregatedAPI(t, subresources.Group, subresources.Version)
	cp := kubeenv.ControlPlane(t, agg.ControlPlaneOption())
	w := &world{cp: cp, agg: agg, c: cp.Client, node: nodeapi.NewFake()}
	ctx := context.Background()

	handler := httptest.NewTLSServer(nodeapi.NewServer(w.node))
	t.Cleanup(handler.Close)
	for name, addr := range map[string]string{"node-a": handler.URL, "node-b": ""} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if addr != "" {
			n.Annotations = map[string]string{nodeapi.HandlerAddressAnnotation: addr}
		}
		must(t, w.c.Create(ctx, n))
	}
	locator := nodeapi.NewAnnotationLocator(w.c, nodeapi.WithTLSConfig(handler.Client().Transport.(*http.Transport).TLSClientConfig))
	api := subresources.New(w.c,
		subresources.WithAuthenticator(&frontproxy.Authenticator{ClientCA: agg.ClientCA, AllowedNames: agg.AllowedNames}),
		subresources.WithLocator(locator),
		subresources.WithVersion(subresources.VersionInfo{GitVersion: "v9.9.9-test"}))
	agg.Serve(t, cp, api)

	// KubeVirt's RBAC: version for everyone, the verbs for alice through a
	// RoleBinding to the edit ClusterRole in namespace default.
	roles, binding := subresources.RBAC()
	for _, r := range roles {
		must(t, w.c.Create(ctx, r))
	}
	must(t, w.c.Create(ctx, binding))
	must(t, w.c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "alice-vm-user"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: subresources.EditClusterRoleName},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "alice"}}}))
	for _, u := range []struct {
		name string
		cfg  **rest.Config
	}{{"alice", &w.alice}, {"bob", &w.bob}} {
		au, err := cp.Env.AddUser(envtest.User{Name: u.name, Groups: []string{"tenants"}}, nil)
		must(t, err)
		*u.cfg = au.Config()
	}
	return w
}

// call makes one HTTP request through the apiserver as cfg's user and
// returns the status code and, for errors, the Status body.
func call(t *testing.T, cfg *rest.Config, method, path, body string) (int, metav1.Status) {
	t.Helper()
	code, b := do(t, cfg, method, path, body)
	var st metav1.Status
	if code >= 300 {
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatalf("%s %s: %d with a body that is not a Status: %q", method, path, code, b)
		}
	}
	return code, st
}

// do makes one HTTP request through the apiserver as cfg's user.
func do(t *testing.T, cfg *rest.Config, method, path, body string) (int, []byte) {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	must(t, err)
	var rd io.Reader
	if body != "" {
		rd = bytes.NewBufferString(body)
	}
	req, err := http.NewRequest(method, strings.TrimSuffix(cfg.Host, "/")+path, rd)
	must(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, b
}

func vmPath(name, verb string) string {
	return subresources.Prefix + "/namespaces/default/virtualmachines/" + url.PathEscape(name) + "/" + verb
}

func vmiPath(name, verb string) string {
	return subresources.Prefix + "/namespaces/default/virtualmachineinstances/" + url.PathEscape(name) + "/" + verb
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

// createVM creates a VM with run strategy rs.
func (w *world) createVM(t *testing.T, name string, rs virtv1.VirtualMachineRunStrategy) *virtv1.VirtualMachine {
	t.Helper()
	vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: virtv1.VirtualMachineSpec{RunStrategy: &rs, Template: template()}}
	must(t, w.c.Create(context.Background(), vm))
	return vm
}

// runVMI creates the VMI of a VM in phase Running on node, as the
// controllers and the handler would, and tells the fake node it runs there.
func (w *world) runVMI(t *testing.T, name, node string, conds ...virtv1.VirtualMachineInstanceCondition) *virtv1.VirtualMachineInstance {
	t.Helper()
	ctx := context.Background()
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: vmiSpec()}
	must(t, w.c.Create(ctx, vmi))
	vmi.Status = virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Running, NodeName: node, Conditions: conds}
	must(t, w.c.Status().Update(ctx, vmi))
	if node == "node-a" {
		w.node.Set("default", name, nodeapi.FakeVMI{})
	}
	return vmi
}

func (w *world) getVM(t *testing.T, name string) *virtv1.VirtualMachine {
	t.Helper()
	vm := &virtv1.VirtualMachine{}
	must(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, vm))
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

// eventually retries check every 50 ms until it returns nil, and fails the
// test with its last error when d passes first.
func eventually(t *testing.T, d time.Duration, check func() error) {
	t.Helper()
	testenv.EventuallyEvery(testenv.Within(t, d), t, 50*time.Millisecond, "the check to pass", func() (bool, string) {
		if err := check(); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}
