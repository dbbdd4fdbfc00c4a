package handler_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/virtkit/virtkit/controllers/handler"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/virt/domain"
	domainlibvirt "github.com/virtkit/virtkit/virt/domain/libvirt"
	"github.com/virtkit/virtkit/virt/spec"
	"github.com/virtkit/virtkit/virt/storage"
)

// realNode is one node's handler on real parts: a real apiserver, a
// manager running the handler with the libvirt connector, and the folders
// of the node (PodsDir, StateDir) and of its launcher pods (PodRoot).
type realNode struct {
	Name     string
	CP       *kubeenv.ControlPlaneEnv
	PodsDir  string
	StateDir string
	PodRoot  string // the pods' folder: a tmpfs inside each pod, empty on the node

	R      *handler.Reconciler
	Writes *kubeenv.WriteCounter
	log    *syncBuffer
	stop   func()
}

func newRealNode(t *testing.T, cp *kubeenv.ControlPlaneEnv) *realNode {
	t.Helper()
	base := testenv.Dir(t)
	n := &realNode{Name: "node-" + filepath.Base(base)[len("vkt-"):], CP: cp,
		PodsDir: filepath.Join(base, "pods"), StateDir: filepath.Join(base, "state"), PodRoot: filepath.Join(base, "p")}
	for _, d := range []string{n.PodsDir, n.PodRoot} {
		must(t, os.MkdirAll(d, 0o755))
	}
	t.Cleanup(func() {
		if n.stop != nil {
			n.stop()
		}
		if t.Failed() && n.log != nil {
			t.Logf("handler log:\n%s", n.log.String())
		}
	})
	return n
}

// podLayout is where the pods keep volumes (inside their tmpfs).
func (n *realNode) podLayout() storage.Layout {
	return storage.Layout{
		EphemeralDir:      filepath.Join(n.PodRoot, "eph"),
		PrivateDir:        filepath.Join(n.PodRoot, "priv"),
		ContainerDisksDir: filepath.Join(n.PodRoot, "cd"),
		HotplugDir:        filepath.Join(n.PodRoot, "hp"),
		DevDir:            filepath.Join(n.PodRoot, "dev"),
	}
}

// start runs a handler process: a manager whose VMI cache holds this node's
// VMIs only, the handler with the libvirt connector, writes counted.
func (n *realNode) start(t *testing.T) {
	t.Helper()
	if n.log == nil {
		n.log = &syncBuffer{}
	}
	log := logr.FromSlogHandler(slog.NewTextHandler(n.log, &slog.HandlerOptions{Level: slog.Level(-1)}))
	skip := true
	mgr, err := ctrl.NewManager(n.CP.Config, ctrl.Options{
		Scheme:                 n.CP.Client.Scheme(),
		Logger:                 log,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: &skip},
		Cache:                  handler.CacheOptions(n.Name),
	})
	must(t, err)
	n.Writes = &kubeenv.WriteCounter{Client: mgr.GetClient(), Describe: describePhase}
	r, err := handler.New(handler.Config{
		NodeName:      n.Name,
		PodsDir:       n.PodsDir,
		PodRunDir:     filepath.Join(n.PodRoot, "run"),
		StateDir:      n.StateDir,
		Emulation:     true,
		StorageLayout: n.podLayout(),
	},
		handler.WithConnector(func(ctx context.Context, uri string) (domain.Manager, error) {
			return domainlibvirt.New(ctx, uri, domainlibvirt.WithLogger(log))
		}),
		handler.WithClient(n.Writes, mgr.GetAPIReader()),
		handler.WithLogger(log),
	)
	must(t, err)
	must(t, r.SetupWithManager(mgr))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	n.R = r
	n.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
		n.stop = nil
	}
}

func describePhase(verb string, obj client.Object) string {
	if v, ok := obj.(*virtv1.VirtualMachineInstance); ok && (verb == "status" || verb == "status-patch") {
		return string(v.Status.Phase)
	}
	return ""
}

// namespace makes a namespace for one test.
func (n *realNode) namespace(t *testing.T, name string) string {
	t.Helper()
	must(t, n.CP.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	return name
}

// guestVMI is a VMI that boots the test guest from a containerDisk, with
// the pod network (masquerade), defaulted as virt-api's webhook would.
func guestVMI(ns, name string) *virtv1.VirtualMachineInstance {
	grace := int64(60)
	vmi := &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Finalizers: []string{virtv1.VirtualMachineInstanceFinalizer}},
		Spec: virtv1.VirtualMachineInstanceSpec{
			TerminationGracePeriodSeconds: &grace,
			Domain: virtv1.DomainSpec{
				Resources: virtv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}},
				Devices:   virtv1.Devices{Disks: []virtv1.Disk{{Name: "root"}}},
			},
			Volumes: []virtv1.Volume{{Name: "root", VolumeSource: virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "localhost/test-guest:1"}}}},
		},
	}
	spec.DefaultVMI(vmi)
	return vmi
}

// schedule creates vmi, starts its launcher pod and moves it to Scheduled
// on this node, as the VMI controller, the scheduler and the kubelet would.
func (n *realNode) schedule(t *testing.T, vmi *virtv1.VirtualMachineInstance) *testPod {
	t.Helper()
	ctx := context.Background()
	must(t, n.CP.Client.Create(ctx, vmi))
	pod := startPod(t, n, vmi)
	vmi.Status = virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Scheduled, NodeName: n.Name}
	must(t, n.CP.Client.Status().Update(ctx, vmi))
	t.Cleanup(func() { n.release(t, client.ObjectKeyFromObject(vmi)) })
	return pod
}

// release deletes the VMI and drops its finalizer, as the VMI controller
// does once the launcher pod is gone.
func (n *realNode) release(t *testing.T, key types.NamespacedName) {
	ctx := context.Background()
	vmi := &virtv1.VirtualMachineInstance{}
	if err := n.CP.Client.Get(ctx, key, vmi); err != nil {
		return
	}
	_ = n.CP.Client.Delete(ctx, vmi)
	if err := n.CP.Client.Get(ctx, key, vmi); err == nil {
		vmi.Finalizers = nil
		if err := n.CP.Client.Update(ctx, vmi); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("release VMI %s: %v", key, err)
		}
	}
}

// waitVMI waits up to limit for the VMI to satisfy ok.
func (n *realNode) waitVMI(t *testing.T, key types.NamespacedName, what string, limit time.Duration, ok func(*virtv1.VirtualMachineInstance) bool) *virtv1.VirtualMachineInstance {
	t.Helper()
	var vmi virtv1.VirtualMachineInstance
	testenv.Eventually(testenv.Within(t, limit), t, fmt.Sprintf("VMI %s: %s", key, what), func() (bool, string) {
		err := n.CP.Client.Get(context.Background(), key, &vmi)
		return err == nil && ok(&vmi), fmt.Sprintf("phase=%s reason=%q conditions=%+v err=%v",
			vmi.Status.Phase, vmi.Status.Reason, vmi.Status.Conditions, err)
	})
	return &vmi
}

func phaseIs(p virtv1.VirtualMachineInstancePhase) func(*virtv1.VirtualMachineInstance) bool {
	return func(v *virtv1.VirtualMachineInstance) bool { return v.Status.Phase == p }
}

// waitConsole waits for a line of the guest's console log.
func waitConsole(t *testing.T, p *testPod, re string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return testenv.WaitConsole(t, ctx, p.Host.SerialLog(), regexp.MustCompile(re))
}

// heartbeat returns the guest's last heartbeat count in its console log.
func heartbeat(t *testing.T, p *testPod) int {
	t.Helper()
	b, err := os.ReadFile(p.Host.SerialLog())
	must(t, err)
	last := -1
	for _, m := range regexp.MustCompile(testguest.HeartbeatLine+` (\d+)`).FindAllSubmatch(b, -1) {
		_, _ = fmt.Sscan(string(m[1]), &last)
	}
	return last
}
