package kubelet

import (
	"testing"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"

	"github.com/virtkit/virtkit/local/controlplane"
)

func goldenConfig(t *testing.T) Config {
	c, err := Config{
		Dir: "/data/kubelets/n1", ControlPlane: controlplane.Config{DataDir: "/data/controlplane"}, NodeName: "n1",
		NodeIP: "192.0.2.10", KubeletBinary: "/bin/kubelet", ContainerdBinDir: "/ctd/bin", CNIBinDir: "/cni/bin",
		SandboxImage: "127.0.0.1:5000/virtkit/pause:devel", Bridge: "vkl-1", PodSubnet: "10.88.1.0/24",
	}.withDefaults()
	assert.NilError(t, err)
	return c
}

// golden compares got with testdata/name; `go test -update` rewrites it.
func assertGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Assert(t, string(got), name)
}

func TestContainerdConfigGolden(t *testing.T) {
	b, err := renderContainerd(goldenConfig(t))
	assert.NilError(t, err)
	assertGolden(t, "containerd.toml", b)
}

func TestKubeletConfigGolden(t *testing.T) {
	b, err := renderKubeletConfig(goldenConfig(t))
	assert.NilError(t, err)
	assertGolden(t, "kubelet.yaml", b)
	assertGolden(t, "hosts.toml", renderHostsTOML("127.0.0.1:5000"))
}

func TestConfigRefusals(t *testing.T) {
	_, err := Config{}.withDefaults()
	for _, f := range []string{"Config.Dir", "Config.ControlPlane", "Config.KubeletBinary", "Config.ContainerdBinDir", "Config.CNIBinDir", "Config.SandboxImage"} {
		assert.ErrorContains(t, err, f)
	}
	c := goldenConfig(t)
	c.NodeIP = "127.0.0.1"
	_, err = c.withDefaults()
	assert.ErrorContains(t, err, `Config.NodeIP "127.0.0.1": must be an address of this host that is not loopback`)
	c = goldenConfig(t)
	c.PodSubnet = "10.88/24"
	_, err = c.withDefaults()
	assert.ErrorContains(t, err, `Config.PodSubnet "10.88/24"`)
}

func TestUnescapeMount(t *testing.T) {
	assert.Equal(t, unescapeMount(`/a\040b`), "/a b")
	assert.Equal(t, unescapeMount("/plain"), "/plain")
}
