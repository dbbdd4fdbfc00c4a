package node

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtkit/virtkit/virt/network"
)

// Both forms of Multus's annotation: the JSON list KubeVirt's launcher
// pods carry and the short form; names default to the pod's namespace and
// interfaces to net1, net2, ...; an interface that is not a free name is
// refused.
func TestParseMultusNetworks(t *testing.T) {
	for _, c := range []struct {
		name, value string
		want        []network.MultusSelection
		err         string
	}{
		{"none", "", nil, ""},
		{"JSON", `[{"name":"br","namespace":"infra","interface":"net1"},{"name":"other"}]`,
			[]network.MultusSelection{{Name: "br", Namespace: "infra", Interface: "net1"}, {Name: "other", Namespace: "ns", Interface: "net2"}}, ""},
		{"short", "infra/br@data0, other",
			[]network.MultusSelection{{Name: "br", Namespace: "infra", Interface: "data0"}, {Name: "other", Namespace: "ns", Interface: "net2"}}, ""},
		{"the pod's own interface", "br@eth0", nil, `interface "eth0" is not a free interface name`},
		{"a path as interface", `[{"name":"br","interface":"../x"}]`, nil, `interface "../x" is not a free interface name`},
		{"no name", `[{"interface":"net1"}]`, nil, "network 0 names no NetworkAttachmentDefinition"},
		{"not JSON", `[{`, nil, "annotation k8s.v1.cni.cncf.io/networks"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseMultusNetworks(c.value, "ns")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// A secondary network runs the bridge plugin on a bridge of its own with
// host-local leases kept in the node's folder, whatever its configuration
// says; other plugins, the pods' bridge, a network name that is a path and
// other IPAM plugins are refused, naming the attachment and the field.
func TestSecondaryPlugins(t *testing.T) {
	c := &CNI{Network: "virt-local-n1", Bridge: "vkl-br0", DataDir: "/state/cni"}
	sec := func(conf string) SecondaryNetwork {
		return SecondaryNetwork{Interface: "net1", Network: "ns/br", Config: json.RawMessage(conf)}
	}
	got, err := c.secondaryPlugins(sec(`{"cniVersion":"0.4.0","name":"sec","type":"bridge","bridge":"sec0","ipam":{"type":"host-local","subnet":"10.9.0.0/24","dataDir":"/etc"}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"cniVersion": "0.4.0", "name": "sec", "type": "bridge", "bridge": "sec0",
		"ipam": map[string]any{"type": "host-local", "subnet": "10.9.0.0/24", "dataDir": "/state/cni/secondary"}}
	if len(got) != 1 || got[0].plugin != "bridge" {
		t.Fatalf("plugins %+v", got)
	}
	if d := cmp.Diff(want, got[0].conf); d != "" {
		t.Errorf("configuration (-want +got):\n%s", d)
	}
	list, err := c.secondaryPlugins(sec(`{"cniVersion":"1.0.0","name":"sec","plugins":[{"type":"bridge","bridge":"sec0"}]}`))
	if err != nil || len(list) != 1 || list[0].conf["name"] != "sec" || list[0].conf["cniVersion"] != "1.0.0" {
		t.Errorf("a configuration list: %+v, %v", list, err)
	}
	for _, bad := range []struct{ conf, err string }{
		{`{"name":"sec","type":"macvlan","master":"eth0"}`, `ns/br: spec.config: plugin "macvlan" does not run`},
		{`{"name":"sec","type":"bridge","bridge":"vkl-br0"}`, `bridge "vkl-br0" is not a bridge of its own`},
		{`{"name":"../../etc","type":"bridge","bridge":"sec0"}`, `name "../../etc" is not a CNI network name`},
		{`{"name":"sec","type":"bridge","bridge":"sec0","ipam":{"type":"dhcp"}}`, `ipam: "dhcp" does not run`},
		{`{"name":"sec","plugins":[{"type":"bridge","bridge":"sec0"},{"type":"portmap"}]}`, `plugins[1]: plugin "portmap" does not run`},
	} {
		if _, err := c.secondaryPlugins(sec(bad.conf)); err == nil || !strings.Contains(err.Error(), bad.err) {
			t.Errorf("%s: %v, want it refused saying %q", bad.conf, err, bad.err)
		}
	}
}
