package deploy_test

import (
	"bytes"
	"testing"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit/deploy"
)

func goldenHandler() deploy.Handler {
	return deploy.Handler{Namespace: "kubevirt", Image: "registry.example/virtkit/virt-handler:v1", TLSSecret: "virt-handler-certs",
		Emulation: true}
}

// The handler's objects as a cluster operator would apply them
// (testdata/handler.yaml; `go test -update` rewrites it), and on a
// single-machine cluster whose apiserver listens on loopback.
func TestHandlerObjectsGolden(t *testing.T) {
	for _, tc := range []struct {
		file string
		edit func(*deploy.Handler)
	}{
		{"handler.yaml", func(*deploy.Handler) {}},
		{"handler-hostnetwork.yaml", func(h *deploy.Handler) {
			h.APIServer, h.DevicePluginDir, h.NodeSelector = "127.0.0.1:6443", "/data/kubelet/device-plugins", map[string]string{"kubernetes.io/hostname": "n1"}
			h.NodeAPIPort, h.ProbePort, h.MetricsPort, h.StateDir = 9000, 9001, 9002, "/data/handlers/n1"
		}},
	} {
		h := goldenHandler()
		tc.edit(&h)
		objs, err := deploy.HandlerObjects(h)
		assert.NilError(t, err)
		var b bytes.Buffer
		for _, o := range objs {
			y, err := yaml.Marshal(o)
			assert.NilError(t, err)
			b.WriteString("---\n")
			b.Write(y)
		}
		golden.Assert(t, b.String(), tc.file)
	}
}

func TestHandlerObjectsRefusals(t *testing.T) {
	_, err := deploy.HandlerObjects(deploy.Handler{})
	for _, f := range []string{"Handler.Namespace: required", "Handler.Image: required", "Handler.TLSSecret: required"} {
		assert.ErrorContains(t, err, f)
	}
	for _, tc := range []struct {
		edit func(*deploy.Handler)
		want string
	}{
		{func(h *deploy.Handler) { h.APIServer = "127.0.0.1" }, `Handler.APIServer "127.0.0.1": want host:port`},
		{func(h *deploy.Handler) { h.NodeAPIPort = 70000 }, "Handler.NodeAPIPort 70000: not a port"},
		{func(h *deploy.Handler) { h.StateDir = "handler" }, `Handler.StateDir "handler": must be absolute`},
		{func(h *deploy.Handler) { h.DevicePluginDir = "device-plugins" }, `Handler.DevicePluginDir "device-plugins": must be absolute`},
	} {
		h := goldenHandler()
		tc.edit(&h)
		_, err := deploy.HandlerObjects(h)
		assert.ErrorContains(t, err, tc.want)
	}
}
