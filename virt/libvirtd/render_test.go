package libvirtd

import (
	"testing"

	"gotest.tools/v3/golden"
)

// The generated configuration is a document: compare it with the golden files
// in testdata (rewrite them with `go test -update` when a change is intended).
func TestRenderGolden(t *testing.T) {
	cfg := Config{Dir: "/tmp/vk", HostUUID: "9a1c7e36-5d2b-4f0e-8c3a-6b7d1e2f3a4b", LogLevel: 3}
	golden.Assert(t, string(RenderLibvirtdConf(cfg)), "libvirtd.conf")
	golden.Assert(t, string(RenderQEMUConf(cfg)), "qemu.conf")
	cfg.QEMUAs = &Owner{UID: 107, GID: 107}
	golden.Assert(t, string(RenderQEMUConf(cfg)), "qemu-dac.conf")
	cfg.QEMUAs, cfg.Session = nil, true
	golden.Assert(t, string(RenderLibvirtdConf(cfg)), "libvirtd-session.conf")
	golden.Assert(t, string(RenderQEMUConf(cfg)), "qemu-session.conf")
	cfg.ConfigDir = "/var/run/libvirt"
	golden.Assert(t, string(RenderSwtpmSetupConf(cfg.Paths())), "swtpm_setup-session.conf")
	golden.Assert(t, string(RenderSwtpmLocalCAConf(cfg.Paths())), "swtpm-localca-session.conf")
}
