package virt_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt"
	"github.com/virtkit/virtkit/virt/domain"
	domainfake "github.com/virtkit/virtkit/virt/domain/fake"
	"github.com/virtkit/virtkit/virt/network"
	"github.com/virtkit/virtkit/virt/spec"
	"github.com/virtkit/virtkit/virt/storage"
	storagefake "github.com/virtkit/virtkit/virt/storage/fake"
)

func tinyVMI() *virtv1.VirtualMachineInstance {
	vmi := &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "tiny", Namespace: "default", UID: "6a1e6b6c-0000-4000-8000-000000000001"},
		Spec: virtv1.VirtualMachineInstanceSpec{
			Domain: virtv1.DomainSpec{
				Resources: virtv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
				Devices:   virtv1.Devices{Disks: []virtv1.Disk{{Name: "root"}}},
			},
			Volumes: []virtv1.Volume{{Name: "root", VolumeSource: virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "example/guest:1"}}}},
		},
	}
	spec.DefaultVMI(vmi) // adds the pod network with masquerade
	return vmi
}

type fakes struct {
	dom     *domainfake.Manager
	storage *storagefake.Storage
	net     *network.Fake
}

func newMachine(t *testing.T, opts ...virt.Option) (*virt.Machine, fakes) {
	t.Helper()
	f := fakes{
		dom:     domainfake.New(),
		storage: storagefake.New(),
		net:     &network.Fake{PodInterfaces: []network.PodInterface{{Name: "eth0", MAC: "0a:58:0a:f4:00:07", IPs: []string{"10.244.0.7/24"}, MTU: 1450}}},
	}
	base := []virt.Option{
		virt.WithDomainManager(f.dom),
		virt.WithStorage(f.storage, storagePodFor()),
		virt.WithNetwork(f.net),
		virt.WithHost(domain.Host{Emulation: true}),
	}
	m, err := virt.New(tinyVMI(), append(base, opts...)...)
	assert.NilError(t, err)
	return m, f
}

func storagePodFor() (pod storage.Pod) { return }

// nothingLeft checks that the fakes hold nothing of the machine.
func nothingLeft(t *testing.T, m *virt.Machine, f fakes) {
	t.Helper()
	infos, err := f.dom.List(context.Background())
	assert.NilError(t, err)
	assert.Check(t, is.Len(infos, 0), "domains left: %v", infos)
	assert.Check(t, is.Len(f.net.Active(), 0), "network left set up")
	assert.Check(t, is.Equal(f.net.DHCPRunning("default"), 0), "DHCP server left running")
	for _, d := range m.StoragePlan {
		assert.Check(t, !f.storage.Prepared(d.Path), "disk %s left prepared", d.Path)
	}
}

func TestStartAndStop(t *testing.T) {
	m, f := newMachine(t)
	ctx := context.Background()
	assert.NilError(t, m.Start(ctx))

	st, _, err := f.dom.State(ctx, m.DomainName())
	assert.NilError(t, err)
	assert.Equal(t, st, domain.StateRunning)
	assert.Check(t, is.Len(f.net.Active(), 1))
	assert.Check(t, is.Equal(f.net.DHCPRunning("default"), 1))
	assert.Check(t, f.storage.Prepared(m.StoragePlan["root"].Path))
	status, err := m.Status(ctx)
	assert.NilError(t, err)
	assert.Equal(t, status.Phase, virtv1.Running)

	assert.NilError(t, m.Stop(ctx, time.Second))
	nothingLeft(t, m, f)
	assert.DeepEqual(t, f.net.Calls(), []string{"Discover", "Setup", "StartDHCP", "Teardown"})
}

// A secondary network bridged to the guest gets a DHCP server when its pod
// interface has an address to hand over; a layer 2 one (no address) gets
// none, and the guest brings its own, as in KubeVirt.
func TestStartSecondaryNetworks(t *testing.T) {
	for _, c := range []struct {
		name string
		ips  []string
		dhcp int
	}{{"with an address", []string{"192.168.177.5/24"}, 1}, {"layer 2", nil, 0}} {
		t.Run(c.name, func(t *testing.T) {
			vmi := tinyVMI()
			vmi.Spec.Networks = append(vmi.Spec.Networks, virtv1.Network{Name: "sec", NetworkSource: virtv1.NetworkSource{
				Multus: &virtv1.MultusNetwork{NetworkName: "sec-net"}}})
			vmi.Spec.Domain.Devices.Interfaces = append(vmi.Spec.Domain.Devices.Interfaces, virtv1.Interface{Name: "sec",
				InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Bridge: &virtv1.InterfaceBridge{}}})
			net := &network.Fake{PodInterfaces: []network.PodInterface{
				{Name: "eth0", MAC: "0a:58:0a:f4:00:07", IPs: []string{"10.244.0.7/24"}, MTU: 1450},
				{Name: network.SecondaryPodInterfaceName("sec"), MAC: "0a:58:c0:a8:b1:05", IPs: c.ips, MTU: 1500}}}
			m, err := virt.New(vmi, virt.WithDomainManager(domainfake.New()), virt.WithStorage(storagefake.New(), storagePodFor()),
				virt.WithNetwork(net), virt.WithHost(domain.Host{Emulation: true}))
			assert.NilError(t, err)
			ctx := context.Background()
			assert.NilError(t, m.Start(ctx))
			assert.Check(t, is.Equal(net.DHCPRunning("default"), 1))
			assert.Check(t, is.Equal(net.DHCPRunning("sec"), c.dhcp))
			assert.NilError(t, m.Stop(ctx, time.Second))
			assert.Check(t, is.Equal(net.DHCPRunning("sec"), 0))
		})
	}
}

// A failing step undoes every step before it: nothing is left half-made.
func TestFailedStartLeavesNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inject func(f fakes)
		step   string
	}{
		{"define refused", func(f fakes) { f.dom.FailNext(domain.OpDefine, errors.New("invalid XML")) }, virt.StepDefine},
		{"start refused", func(f fakes) { f.dom.FailNext(domain.OpStart, errors.New("qemu died")) }, virt.StepStart},
		{"network setup fails", func(f fakes) {
			f.net.SetupFunc = func(context.Context, network.Plan) error { return errors.New("tap busy") }
		}, virt.StepSetupNetwork},
		{"DHCP fails", func(f fakes) {
			f.net.StartDHCPFunc = func(context.Context, network.InterfacePlan) (network.DHCPServer, error) {
				return nil, errors.New("no socket")
			}
		}, virt.StepStartDHCP},
		{"storage prepare fails", func(f fakes) { f.storage.FailNext(storagefake.OpPrepare, errors.New("disk full")) }, virt.StepPrepareStorage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, f := newMachine(t)
			tc.inject(f)
			err := m.Start(context.Background())
			assert.ErrorContains(t, err, "step "+tc.step+":")
			assert.ErrorContains(t, err, "default/tiny")
			nothingLeft(t, m, f)
		})
	}
}

func TestInterfacesNeedANetworkNamespace(t *testing.T) {
	f := storagefake.New()
	m, err := virt.New(tinyVMI(), virt.WithDomainManager(domainfake.New()), virt.WithStorage(f, storagePodFor()))
	assert.NilError(t, err)
	err = m.Start(context.Background())
	assert.ErrorContains(t, err, "spec.domain.devices.interfaces[0] (default): no pod network namespace")
	for _, d := range m.StoragePlan {
		assert.Check(t, !f.Prepared(d.Path))
	}
}

// The start-up chain is data: a caller inserts its own step.
func TestEditableChain(t *testing.T) {
	var order []string
	steps := virt.DefaultSteps()
	var edited []virt.Step
	for _, s := range steps {
		run := s.Run
		name := s.Name
		s.Run = func(ctx context.Context, m *virt.Machine) error { order = append(order, name); return run(ctx, m) }
		edited = append(edited, s)
		if s.Name == virt.StepPrepareStorage {
			edited = append(edited, virt.Step{Name: "audit", Run: func(context.Context, *virt.Machine) error { order = append(order, "audit"); return nil }})
		}
	}
	m, _ := newMachine(t, virt.WithSteps(edited))
	assert.NilError(t, m.Start(context.Background()))
	want := []string{"plan-storage", "prepare-storage", "audit", "plan-network", "setup-network", "start-dhcp", "define", "start"}
	if d := cmp.Diff(want, order); d != "" {
		t.Errorf("step order (-want +got):\n%s", d)
	}
}

func TestNewNeedsADomainManager(t *testing.T) {
	_, err := virt.New(tinyVMI())
	assert.ErrorContains(t, err, "virt.WithDomainManager")
	_, err = virt.New(nil)
	assert.ErrorContains(t, err, "vmi is nil")
}

// A restarted caller adopts a running machine: nothing is set up again, the
// DHCP server runs again in the new process, and Stop undoes everything.
func TestAdoptRunningMachine(t *testing.T) {
	ctx := context.Background()
	first, f := newMachine(t)
	assert.NilError(t, first.Start(ctx))
	callsBefore := len(f.net.Calls())
	storageBefore := len(f.storage.Calls())

	// The earlier process is gone; its DHCP server with it.
	f.net.StartDHCPFunc = nil
	adopted, err := virt.New(tinyVMI(),
		virt.WithDomainManager(f.dom),
		virt.WithStorage(f.storage, storagePodFor()),
		virt.WithNetwork(f.net),
		virt.WithHost(domain.Host{Emulation: true}),
		virt.WithPlans(first.StoragePlan, first.NetworkPlan),
	)
	assert.NilError(t, err)
	assert.NilError(t, adopted.Adopt(ctx))
	assert.Assert(t, adopted.Started())
	if d := cmp.Diff([]string{"StartDHCP"}, f.net.Calls()[callsBefore:]); d != "" {
		t.Errorf("network calls on adopt (-want +got):\n%s", d)
	}
	assert.Equal(t, len(f.storage.Calls()), storageBefore, "storage touched on adopt")
	st, _, err := f.dom.State(ctx, adopted.DomainName())
	assert.NilError(t, err)
	assert.Equal(t, st, domain.StateRunning)
	assert.DeepEqual(t, adopted.NetworkPlan, first.NetworkPlan)

	assert.NilError(t, adopted.Stop(ctx, time.Second))
	infos, err := f.dom.List(ctx)
	assert.NilError(t, err)
	assert.Check(t, is.Len(infos, 0))
	assert.Check(t, is.Len(f.net.Active(), 0))
	for _, d := range first.StoragePlan {
		assert.Check(t, !f.storage.Prepared(d.Path), "disk %s left prepared", d.Path)
	}
}

// Adopting a machine whose domain vanished fails naming the step, and Stop
// still removes the network and storage the earlier process made.
func TestAdoptVanishedDomainStillStops(t *testing.T) {
	ctx := context.Background()
	first, f := newMachine(t)
	assert.NilError(t, first.Start(ctx))
	assert.NilError(t, f.dom.Destroy(ctx, first.DomainName()))
	assert.NilError(t, f.dom.Undefine(ctx, first.DomainName()))

	adopted, err := virt.New(tinyVMI(),
		virt.WithDomainManager(f.dom),
		virt.WithStorage(f.storage, storagePodFor()),
		virt.WithNetwork(f.net),
		virt.WithPlans(first.StoragePlan, first.NetworkPlan),
	)
	assert.NilError(t, err)
	err = adopted.Adopt(ctx)
	assert.ErrorContains(t, err, "adopt step define")
	assert.Assert(t, errors.Is(err, domain.ErrNotFound))
	assert.NilError(t, adopted.Stop(ctx, time.Second))
	assert.Check(t, is.Len(f.net.Active(), 0))
	for _, d := range first.StoragePlan {
		assert.Check(t, !f.storage.Prepared(d.Path), "disk %s left prepared", d.Path)
	}
}
