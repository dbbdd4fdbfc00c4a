package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virtapi/subresources"
)

// call is one request the fake API received: the Client method, where, and
// the options body sent.
type call struct {
	Method, Namespace, Name string
	Body                    any
}

// fakeAPI records calls and answers with errs[Method] (nil: success).
type fakeAPI struct {
	mu      sync.Mutex
	calls   []call
	errs    map[string]error
	console func(n int) (io.ReadWriteCloser, error) // the n-th Console call, from 0
	vnc     func() (io.ReadWriteCloser, error)
	// forward opens a PortForward stream; nil: an echo.
	forward    func() (io.ReadWriteCloser, error)
	screenshot []byte
	version    subresources.VersionInfo
}

var _ api = (*fakeAPI)(nil)

func (f *fakeAPI) record(method, ns, name string, body any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call{method, ns, name, body})
	return f.errs[method]
}

func (f *fakeAPI) Start(_ context.Context, ns, name string, o virtv1.StartOptions) error {
	return f.record("Start", ns, name, o)
}
func (f *fakeAPI) Stop(_ context.Context, ns, name string, o virtv1.StopOptions) error {
	return f.record("Stop", ns, name, o)
}
func (f *fakeAPI) Restart(_ context.Context, ns, name string, o virtv1.RestartOptions) error {
	return f.record("Restart", ns, name, o)
}
func (f *fakeAPI) Migrate(_ context.Context, ns, name string, o virtv1.MigrateOptions) error {
	return f.record("Migrate", ns, name, o)
}
func (f *fakeAPI) EvacuateCancel(_ context.Context, ns, name string, o virtv1.EvacuateCancelOptions) error {
	return f.record("EvacuateCancel", ns, name, o)
}
func (f *fakeAPI) EvacuateCancelVMI(_ context.Context, ns, name string, o virtv1.EvacuateCancelOptions) error {
	return f.record("EvacuateCancelVMI", ns, name, o)
}
func (f *fakeAPI) Pause(_ context.Context, ns, name string, o virtv1.PauseOptions) error {
	return f.record("Pause", ns, name, o)
}
func (f *fakeAPI) Unpause(_ context.Context, ns, name string, o virtv1.UnpauseOptions) error {
	return f.record("Unpause", ns, name, o)
}
func (f *fakeAPI) SoftReboot(_ context.Context, ns, name string) error {
	return f.record("SoftReboot", ns, name, nil)
}
func (f *fakeAPI) Reset(_ context.Context, ns, name string) error {
	return f.record("Reset", ns, name, nil)
}
func (f *fakeAPI) AddVolume(_ context.Context, ns, name string, o virtv1.AddVolumeOptions) error {
	return f.record("AddVolume", ns, name, o)
}
func (f *fakeAPI) RemoveVolume(_ context.Context, ns, name string, o virtv1.RemoveVolumeOptions) error {
	return f.record("RemoveVolume", ns, name, o)
}
func (f *fakeAPI) AddVMIVolume(_ context.Context, ns, name string, o virtv1.AddVolumeOptions) error {
	return f.record("AddVMIVolume", ns, name, o)
}
func (f *fakeAPI) RemoveVMIVolume(_ context.Context, ns, name string, o virtv1.RemoveVolumeOptions) error {
	return f.record("RemoveVMIVolume", ns, name, o)
}

// ExpandSpec and ExpandVMSpec answer a VM labelled expanded.
func (f *fakeAPI) ExpandSpec(_ context.Context, ns, name string) (*virtv1.VirtualMachine, error) {
	if err := f.record("ExpandSpec", ns, name, nil); err != nil {
		return nil, err
	}
	return &virtv1.VirtualMachine{TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"expanded": "yes"}}}, nil
}

func (f *fakeAPI) ExpandVMSpec(_ context.Context, ns string, vm *virtv1.VirtualMachine) (*virtv1.VirtualMachine, error) {
	if err := f.record("ExpandVMSpec", ns, vm.Name, vm.Spec); err != nil {
		return nil, err
	}
	out := vm.DeepCopy()
	out.Namespace, out.Labels = ns, map[string]string{"expanded": "yes"}
	return out, nil
}

func (f *fakeAPI) Console(_ context.Context, ns, name string) (io.ReadWriteCloser, error) {
	f.mu.Lock()
	n := 0
	for _, c := range f.calls {
		if c.Method == "Console" {
			n++
		}
	}
	f.calls = append(f.calls, call{"Console", ns, name, nil})
	f.mu.Unlock()
	return f.console(n)
}

func (f *fakeAPI) VNC(_ context.Context, ns, name string) (io.ReadWriteCloser, error) {
	if err := f.record("VNC", ns, name, nil); err != nil {
		return nil, err
	}
	return f.vnc()
}

func (f *fakeAPI) GuestOSInfo(_ context.Context, ns, name string) (virtv1.VirtualMachineInstanceGuestAgentInfo, error) {
	return virtv1.VirtualMachineInstanceGuestAgentInfo{GAVersion: "7.2", Hostname: name}, f.record("GuestOSInfo", ns, name, nil)
}

func (f *fakeAPI) UserList(_ context.Context, ns, name string) (virtv1.VirtualMachineInstanceGuestOSUserList, error) {
	return virtv1.VirtualMachineInstanceGuestOSUserList{Items: []virtv1.VirtualMachineInstanceGuestOSUser{{UserName: "root"}}}, f.record("UserList", ns, name, nil)
}

func (f *fakeAPI) FilesystemList(_ context.Context, ns, name string) (virtv1.VirtualMachineInstanceFileSystemList, error) {
	return virtv1.VirtualMachineInstanceFileSystemList{Items: []virtv1.VirtualMachineInstanceFileSystem{{MountPoint: "/"}}}, f.record("FilesystemList", ns, name, nil)
}

func (f *fakeAPI) Screenshot(_ context.Context, ns, name string) ([]byte, error) {
	return f.screenshot, f.record("Screenshot", ns, name, nil)
}

// forwardCall is the body recorded for a PortForward: where it went.
type forwardCall struct {
	Resource string
	Port     int
	Protocol string
}

func (f *fakeAPI) PortForward(_ context.Context, resource, ns, name string, port int, protocol string) (io.ReadWriteCloser, error) {
	if err := f.record("PortForward", ns, name, forwardCall{resource, port, protocol}); err != nil {
		return nil, err
	}
	if f.forward != nil {
		return f.forward()
	}
	a, b := net.Pipe()
	go func() {
		defer b.Close()
		_, _ = io.Copy(b, b)
	}()
	return a, nil
}

func (f *fakeAPI) Version(context.Context) (subresources.VersionInfo, error) {
	return f.version, f.record("Version", "", "", nil)
}

func (f *fakeAPI) recorded() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// harness runs virtctl in-process against a fake API and a fake cluster.
type harness struct {
	api        *fakeAPI
	kube       client.Client
	kubeconfig string // $KUBECONFIG
	stdin      io.Reader
	stdout     *syncBuffer
	stderr     *syncBuffer
	connect    func(*rest.Config) (api, client.Client, error) // default: the fakes
}

// newHarness writes a kubeconfig whose context has namespace ctxNS (empty:
// none) and makes the fakes; objs are in the fake cluster.
func newHarness(t *testing.T, ctxNS string, objs ...client.Object) *harness {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	writeKubeconfig(t, path, "https://127.0.0.1:1", ctxNS, &clientcmdapi.AuthInfo{Token: "t"})
	return &harness{
		api:        &fakeAPI{errs: map[string]error{}},
		kube:       fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build(),
		kubeconfig: path,
		stdin:      bytes.NewReader(nil),
		stdout:     &syncBuffer{}, stderr: &syncBuffer{},
	}
}

func (h *harness) deps() deps {
	connect := h.connect
	if connect == nil {
		connect = func(*rest.Config) (api, client.Client, error) { return h.api, h.kube, nil }
	}
	return deps{
		stdin: h.stdin, stdout: h.stdout, stderr: h.stderr,
		getenv: func(k string) string {
			if k == "KUBECONFIG" {
				return h.kubeconfig
			}
			return ""
		},
		home:         "/nonexistent",
		connect:      connect,
		randomSuffix: func() string { return "abcde" },
		lookPath:     func(string) (string, error) { return "", io.EOF },
		poll:         time.Millisecond,
		version:      subresources.VersionInfo{GitVersion: "v1.2.3-client", GoVersion: "go1.x", Compiler: "gc", Platform: "linux/amd64"},
	}
}

func (h *harness) run(args ...string) int {
	return run(context.Background(), args, h.deps())
}

// writeKubeconfig writes a kubeconfig with one context "test" of a cluster
// at server, user auth, and namespace ns.
func writeKubeconfig(t testing.TB, path, server, ns string, auth *clientcmdapi.AuthInfo) {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["test"] = auth
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test", Namespace: ns}
	cfg.CurrentContext = "test"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
}
