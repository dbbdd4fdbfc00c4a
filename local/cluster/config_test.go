package cluster

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtkit/virtkit/virt/domain"
)

func TestConfigNodes(t *testing.T) {
	base := Config{DataDir: "/d", BinDir: "/b", CNIBinDir: "/c",
		Connector: func(context.Context, string) (domain.Manager, error) { return nil, nil }}
	with := func(f func(*Config)) Config { c := base; f(&c); return c }
	for _, tc := range []struct {
		name            string
		cfg             Config
		nodes, hollow   []string
		wantErrContains string
	}{
		{name: "default local node", cfg: base, nodes: []string{"local"}},
		{name: "hollow nodes only: no default local node",
			cfg: with(func(c *Config) { c.HollowNodes = []string{"h0", "h1"} }), hollow: []string{"h0", "h1"}},
		{name: "both", cfg: with(func(c *Config) { c.Nodes, c.HollowNodes = []string{"a"}, []string{"h0"} }),
			nodes: []string{"a"}, hollow: []string{"h0"}},
		{name: "a name in both lists",
			cfg:             with(func(c *Config) { c.Nodes, c.HollowNodes = []string{"a"}, []string{"a"} }),
			wantErrContains: `Config.HollowNodes[0] "a": named twice`},
		{name: "hollow with the operator",
			cfg: with(func(c *Config) {
				c.Operator, c.KubeletNode, c.ContainerdBinDir, c.ImagesDir = true, "real", "/x", "/y"
				c.HollowNodes = []string{"h0"}
			}),
			wantErrContains: "Config.HollowNodes: not with Config.Operator"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.cfg.withDefaults()
			if tc.wantErrContains != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrContains) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErrContains)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.nodes, got.Nodes); diff != "" {
				t.Errorf("Nodes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.hollow, got.HollowNodes); diff != "" {
				t.Errorf("HollowNodes (-want +got):\n%s", diff)
			}
		})
	}
}

// The in-process components' clients run at the rates their processes
// would: KubeVirt's defaults for virtkit's, the kubelet's for a node.
func TestClientRates(t *testing.T) {
	c := &Cluster{}
	for comp, want := range map[string]float32{ComponentController: 200, ComponentAPI: 200, ComponentHandler: 50, ComponentNode: 50} {
		r, ok := c.clientRate(comp)
		if !ok || r.QPS != want {
			t.Errorf("%s: %+v %v, want QPS %v", comp, r, ok, want)
		}
	}
	if _, ok := c.clientRate(ComponentInstall); ok {
		t.Error("virt-local's own install client got a rate")
	}
}
