package handler_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/controllers/handler"
	vmictl "github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
	"github.com/virtkit/virtkit/virt/confined"
	"github.com/virtkit/virtkit/virt/domain"
	domainfake "github.com/virtkit/virtkit/virt/domain/fake"
	"github.com/virtkit/virtkit/virt/launcher"
	"github.com/virtkit/virtkit/virt/network"
	"github.com/virtkit/virtkit/virt/spec"
	"github.com/virtkit/virtkit/virt/storage"
	storagefake "github.com/virtkit/virtkit/virt/storage/fake"
)

const node = "node-a"

// fakeNode is a handler on fakes: an in-memory domain Manager standing for
// every launcher's libvirt, network.Fake for the pod namespaces,
// storagefake for the disks, and controller-runtime's fake client.
type fakeNode struct {
	t      *testing.T
	c      client.Client
	writes *kubeenv.WriteCounter
	dom    *domainfake.Manager
	net    *network.Fake
	disks  *storagefake.Storage
	files  storagefake.FS // the pods' files, for hotplug
	clock  *clocktesting.FakeClock
	run    string // PodsDir
	state  string // StateDir
	root   string // the pods' file system, as Pod.Root
	// node is the node's procfs and sysfs the handler reads host facts
	// from; the pods' libvirtd is PID 4242 there.
	node fstest.MapFS
	// libvirt stops the socket standing for each launcher's libvirtd, by
	// launcher folder.
	libvirt map[string]func()
	r       *handler.Reconciler
	extra   []handler.Option // added to every handler the node builds
	// kvm is a node that may use KVM (Config.Emulation false): the CR's
	// useEmulation decides. The other fake nodes never use it.
	kvm bool
}

// sharedManager keeps the fake alive when a guest closes its connection:
// all launchers of a fakeNode are the one fake.
type sharedManager struct{ domain.Manager }

func (sharedManager) Close() error { return nil }

func newFakeNode(t *testing.T, objs ...client.Object) *fakeNode {
	t.Helper()
	dir := t.TempDir()
	n := &fakeNode{
		t:     t,
		dom:   domainfake.New(),
		net:   &network.Fake{PodInterfaces: []network.PodInterface{{Name: "eth0", MAC: "0a:58:0a:f4:00:07", IPs: []string{"10.244.0.7/24"}, MTU: 1450}}},
		disks: storagefake.New(),
		files: storagefake.FS{Images: map[string]storage.ImageInfo{}},
		clock: clocktesting.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)),
		run:   filepath.Join(dir, "pods"),
		state: filepath.Join(dir, "state"),
		root:  filepath.Join(dir, "podroot"),
		node:  fstest.MapFS{},

		libvirt: map[string]func(){},
	}
	// The pod's containerDisk image volume, as the VMI controller mounts it.
	disk := filepath.Join(n.root, storage.DefaultLayout().ContainerDisksDir, "root", "disk")
	assert.NilError(t, os.MkdirAll(disk, 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(disk, "guest.qcow2"), nil, 0o644))
	// The plain tracker: the field-managed one cannot convert the VMI's
	// status (a uint64 field).
	s := scheme.New()
	n.c = fake.NewClientBuilder().WithScheme(s).
		WithObjectTracker(clienttesting.NewObjectTracker(s, serializer.NewCodecFactory(s).UniversalDecoder())).
		WithStatusSubresource(&virtv1.VirtualMachineInstance{}).WithObjects(objs...).Build()
	n.writes = &kubeenv.WriteCounter{Client: n.c}
	n.r = n.handler()
	return n
}

// handler builds a (new) handler process on the node's fakes.
func (n *fakeNode) handler() *handler.Reconciler {
	n.t.Helper()
	r, err := handler.New(handler.Config{NodeName: node, PodsDir: n.run, PodRunDir: "/var/run/virtkit", StateDir: n.state, Emulation: !n.kvm},
		append([]handler.Option{
			handler.WithConnector(func(context.Context, string) (domain.Manager, error) { return sharedManager{n.dom}, nil }),
			handler.WithPodOpener(func(context.Context, string) (*handler.Pod, error) {
				return &handler.Pod{PID: 4242, Network: n.net, Root: n.root, Close: func() error { return nil }}, nil
			}),
			handler.WithStorage(func(storage.FS) (storage.Interface, storage.Inspector) { return n.disks, n.files }),
			handler.WithClock(n.clock),
			handler.WithClient(n.writes, n.c),
			handler.WithNodeFS(n.node),
		}, n.extra...)...,
	)
	assert.NilError(n.t, err)
	return r
}

// scheduledVMI is a defaulted VMI as the VMI controller leaves it on this
// node: phase Scheduled, with the finalizer.
func scheduledVMI(name string) *virtv1.VirtualMachineInstance {
	vmi := &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			Finalizers: []string{virtv1.VirtualMachineInstanceFinalizer}},
		Spec: virtv1.VirtualMachineInstanceSpec{
			Domain: virtv1.DomainSpec{
				Resources: virtv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
				Devices:   virtv1.Devices{Disks: []virtv1.Disk{{Name: "root"}}},
			},
			Volumes: []virtv1.Volume{{Name: "root", VolumeSource: virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "example/guest:1"}}}},
		},
		Status: virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Scheduled, NodeName: node},
	}
	spec.DefaultVMI(vmi)
	return vmi
}

// launcherPod makes vmi's launcher pod on the node, as the VMI controller
// renders it and the scheduler binds it, and its folder (the pod's
// emptyDir), and returns the folder.
func (n *fakeNode) launcherPod(vmi *virtv1.VirtualMachineInstance) launcher.Layout {
	n.t.Helper()
	pod, err := vmictl.RenderPod(vmi, vmictl.PodOptions{LauncherImage: "example/virt-launcher:1", Emulation: true})
	assert.NilError(n.t, err)
	pod.UID = "pod-" + vmi.UID
	pod.Spec.NodeName = node
	assert.NilError(n.t, n.c.Create(context.Background(), pod))
	l := launcher.Layout{Root: vmictl.PodFolder(n.run, pod)}
	assert.NilError(n.t, os.MkdirAll(l.Root, 0o777))
	return l
}

// ready makes the VMI's launcher pod and its folder with its ready file.
func (n *fakeNode) ready(vmi *virtv1.VirtualMachineInstance) launcher.Layout {
	n.t.Helper()
	l := n.launcherPod(vmi)
	assert.NilError(n.t, os.MkdirAll(filepath.Dir(l.LibvirtSocket()), 0o755))
	n.listenLibvirt(l)
	assert.NilError(n.t, os.WriteFile(l.ReadyFile(), []byte(l.LibvirtURI()+"\n"), 0o644))
	return l
}

// exited records a launcher result, as a launcher that ended does.
func (n *fakeNode) exited(l launcher.Layout, res launcher.Result) {
	n.t.Helper()
	b, err := json.Marshal(res)
	assert.NilError(n.t, err)
	assert.NilError(n.t, os.WriteFile(l.ExitFile(), b, 0o644))
	_ = os.Remove(l.ReadyFile())
	n.stopLibvirt(l)
}

func (n *fakeNode) reconcile(name string) ctrl.Result {
	n.t.Helper()
	res, err := n.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: name}})
	assert.NilError(n.t, err)
	return res
}

func (n *fakeNode) vmi(name string) *virtv1.VirtualMachineInstance {
	n.t.Helper()
	vmi := &virtv1.VirtualMachineInstance{}
	assert.NilError(n.t, n.c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: name}, vmi))
	return vmi
}

// running starts a VMI to Running on the node.
func (n *fakeNode) running(name string) (*virtv1.VirtualMachineInstance, launcher.Layout) {
	n.t.Helper()
	vmi := scheduledVMI(name)
	assert.NilError(n.t, n.c.Create(context.Background(), vmi))
	assert.NilError(n.t, n.c.Status().Update(context.Background(), vmi))
	l := n.ready(vmi)
	n.reconcile(name)
	got := n.vmi(name)
	assert.Equal(n.t, got.Status.Phase, virtv1.Running)
	return got, l
}

// nothingLeft checks that no domain, network set-up, DHCP server, prepared
// disk or state record of the handler remains.
func (n *fakeNode) nothingLeft() {
	n.t.Helper()
	infos, err := n.dom.List(context.Background())
	assert.NilError(n.t, err)
	assert.Check(n.t, len(infos) == 0, "domains left: %v", infos)
	assert.Check(n.t, len(n.net.Active()) == 0, "network left set up: %v", n.net.Active())
	assert.Check(n.t, n.net.DHCPRunning("default") == 0, "DHCP server left running")
	for _, c := range n.disks.Calls() {
		for _, p := range c.Plan {
			assert.Check(n.t, !n.disks.Prepared(p.Path), "disk %s left prepared", p.Path)
		}
	}
	recs, _ := filepath.Glob(filepath.Join(n.state, "*.json"))
	assert.Check(n.t, len(recs) == 0, "state records left: %v", recs)
}

// listenLibvirt puts a socket where the launcher's libvirtd listens: the
// handler checks it is one before it connects (the fake connector then
// stands for libvirt).
func (n *fakeNode) listenLibvirt(l launcher.Layout) {
	n.t.Helper()
	rel, err := filepath.Rel(l.Root, l.LibvirtSocket())
	assert.NilError(n.t, err)
	if _, ok := n.libvirt[l.Root]; ok {
		return
	}
	// Listened on through the folder's handle: the path may be longer than
	// a socket address holds.
	root, err := confined.Open(l.Root, confined.NoSymlinks)
	assert.NilError(n.t, err)
	ln, err := root.ListenUnix(rel)
	assert.NilError(n.t, err)
	stop := sync.OnceFunc(func() {
		ln.Close()
		root.Close()
	})
	n.libvirt[l.Root] = stop
	n.t.Cleanup(stop)
}

// stopLibvirt ends the launcher's libvirtd: its socket goes.
func (n *fakeNode) stopLibvirt(l launcher.Layout) {
	if stop, ok := n.libvirt[l.Root]; ok {
		stop()
		delete(n.libvirt, l.Root)
	}
}
