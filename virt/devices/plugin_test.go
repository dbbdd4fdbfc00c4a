package devices_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"gotest.tools/v3/assert"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/virtkit/virtkit/virt/devices"
)

func TestForNode(t *testing.T) {
	names := func(ds []devices.Device) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Resource)
		}
		return out
	}
	for _, tc := range []struct {
		facts devices.NodeFacts
		want  []string
	}{
		{devices.NodeFacts{KVMPresent: true}, []string{devices.KVM, devices.Tun, devices.VhostNet}},
		{devices.NodeFacts{KVMPresent: true, KVMOff: true}, []string{devices.Tun, devices.VhostNet}},
		{devices.NodeFacts{}, []string{devices.Tun, devices.VhostNet}},
	} {
		if diff := cmp.Diff(tc.want, names(devices.ForNode(tc.facts))); diff != "" {
			t.Errorf("ForNode(%+v) (-want +got):\n%s", tc.facts, diff)
		}
	}
}

// fakeKubelet is the kubelet's registration service on DIR/kubelet.sock.
type fakeKubelet struct {
	pluginapi.UnimplementedRegistrationServer
	mu   sync.Mutex
	regs []*pluginapi.RegisterRequest
}

func (k *fakeKubelet) Register(_ context.Context, r *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.regs = append(k.regs, r)
	return &pluginapi.Empty{}, nil
}

func (k *fakeKubelet) registrations() []*pluginapi.RegisterRequest {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]*pluginapi.RegisterRequest(nil), k.regs...)
}

// startFakeKubelet serves the registration service on DIR/kubelet.sock
// until the test ends.
func startFakeKubelet(t *testing.T, dir string) *fakeKubelet {
	t.Helper()
	k := &fakeKubelet{}
	srv := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(srv, k)
	ln, err := net.Listen("unix", filepath.Join(dir, "kubelet.sock"))
	assert.NilError(t, err)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return k
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPluginRegistersServesAndRegistersAgain(t *testing.T) {
	dir := t.TempDir()
	k := startFakeKubelet(t, dir)

	// /dev/null stands for the device: it is a device node on every host.
	dev := devices.Device{Resource: "devices.kubevirt.io/null", Path: "/dev/null", Count: 3}
	p := devices.NewPlugin(dev, devices.WithDir(dir), devices.WithCheckInterval(20*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()

	waitFor(t, "the registration", func() bool { return len(k.registrations()) == 1 })
	r := k.registrations()[0]
	assert.Equal(t, r.ResourceName, dev.Resource)
	assert.Equal(t, r.Endpoint, "kubevirt-null.sock")
	assert.Equal(t, r.Version, pluginapi.Version)

	conn, err := grpc.NewClient("unix://"+p.Socket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	assert.NilError(t, err)
	defer conn.Close()
	c := pluginapi.NewDevicePluginClient(conn)
	stream, err := c.ListAndWatch(ctx, &pluginapi.Empty{})
	assert.NilError(t, err)
	first, err := stream.Recv()
	assert.NilError(t, err)
	assert.Equal(t, len(first.Devices), 3)
	for _, d := range first.Devices {
		assert.Equal(t, d.Health, pluginapi.Healthy, d.ID)
	}
	alloc, err := c.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{first.Devices[0].ID}}}})
	assert.NilError(t, err)
	assert.Equal(t, len(alloc.ContainerResponses), 1)
	spec := alloc.ContainerResponses[0].Devices[0]
	assert.Equal(t, spec.HostPath, "/dev/null")
	assert.Equal(t, spec.ContainerPath, "/dev/null")
	assert.Equal(t, spec.Permissions, "rw")

	// A restarted kubelet clears the folder: the plugin registers again.
	assert.NilError(t, os.Remove(p.Socket()))
	waitFor(t, "the second registration", func() bool { return len(k.registrations()) == 2 })
	waitFor(t, "the socket served again", func() bool { _, err := os.Stat(p.Socket()); return err == nil })

	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	_, err = os.Stat(p.Socket())
	assert.Assert(t, os.IsNotExist(err), "the socket is removed when the plugin stops")
}

func TestAMissingDeviceIsUnhealthy(t *testing.T) {
	dir := t.TempDir()
	k := startFakeKubelet(t, dir)

	p := devices.NewPlugin(devices.Device{Resource: "devices.kubevirt.io/none", Path: filepath.Join(dir, "absent"), Count: 1}, devices.WithDir(dir))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Run(ctx)
	waitFor(t, "the registration", func() bool { return len(k.registrations()) == 1 })
	conn, err := grpc.NewClient("unix://"+p.Socket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	assert.NilError(t, err)
	defer conn.Close()
	stream, err := pluginapi.NewDevicePluginClient(conn).ListAndWatch(ctx, &pluginapi.Empty{})
	assert.NilError(t, err)
	got, err := stream.Recv()
	assert.NilError(t, err)
	assert.Equal(t, got.Devices[0].Health, pluginapi.Unhealthy)
}
