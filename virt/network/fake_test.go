package network_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/network"
	"github.com/virtkit/virtkit/virt/network/networktest"
)

func TestFake(t *testing.T) {
	ctx := context.Background()
	f := &network.Fake{PodInterfaces: []network.PodInterface{podEth0}}
	var c network.Configurator = f
	pod, err := c.Discover(ctx)
	assert.NilError(t, err)
	plan, err := network.MakePlan(networktest.VMIWith([]virtv1.Interface{networktest.Masquerade("default")}, []virtv1.Network{networktest.PodNetwork("default")}), pod)
	assert.NilError(t, err)

	_, err = c.StartDHCP(ctx, plan["default"])
	assert.ErrorContains(t, err, "not set up")
	assert.NilError(t, c.Setup(ctx, plan))
	assert.NilError(t, c.Setup(ctx, plan), "a second setup is a no-op")
	srv, err := c.StartDHCP(ctx, plan["default"])
	assert.NilError(t, err)
	assert.Equal(t, f.DHCPRunning("default"), 1)
	assert.NilError(t, srv.Stop())
	assert.NilError(t, srv.Stop())
	assert.Equal(t, f.DHCPRunning("default"), 0)
	assert.DeepEqual(t, f.Active(), plan)
	assert.NilError(t, c.Teardown(ctx, plan))
	assert.Equal(t, len(f.Active()), 0)

	bad := network.Plan{"default": plan["default"]}
	p := bad["default"]
	p.TapName = ""
	bad["default"] = p
	err = c.Setup(ctx, bad)
	assert.Assert(t, errors.Is(err, network.ErrInvalidPlan), "%v", err)
	assert.Equal(t, len(f.Active()), 0)

	want := []string{"Discover", "StartDHCP", "Setup", "Setup", "StartDHCP", "Teardown", "Setup"}
	if d := cmp.Diff(want, f.Calls()); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}

	f.SetupFunc = func(context.Context, network.Plan) error { return errors.New("injected") }
	assert.ErrorContains(t, c.Setup(ctx, plan), "injected")
}
