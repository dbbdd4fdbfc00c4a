package deploy_test

import (
	"bytes"
	"slices"
	"testing"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit/deploy"
)

func goldenHandler() deploy.Handler {
	return deploy.Handler{Namespace: "kubevirt", Image: "registry.example/virtkit/virt-handler:v1", TLSSecret: "virt-handler-certs",
		Emulation: true}
}

// The handler's objects as a cluster operator would apply them, with a
// dedicated migration network (testdata/handler.yaml; `go test -update`
// rewrites it), and on a single-machine cluster whose apiserver listens on
// loopback.
func TestHandlerObjectsGolden(t *testing.T) {
	for _, tc := range []struct {
		file string
		edit func(*deploy.Handler)
	}{
		{"handler.yaml", func(h *deploy.Handler) { h.MigrationNetwork = "migration-net" }},
		{"handler-hostnetwork.yaml", func(h *deploy.Handler) {
			h.APIServer, h.DevicePluginDir = "127.0.0.1:6443", "/data/kubelet/device-plugins"
			h.Placement = deploy.Placement{NodeSelector: map[string]string{"kubernetes.io/hostname": "n1"},
				Tolerations: []corev1.Toleration{{Key: "example.com/vms", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}
			h.NodeAPIPort, h.ProbePort, h.MetricsPort, h.StateDir = 9000, 9001, 9002, "/data/handlers/n1"
			h.LauncherImage = "registry.example/virtkit/virt-launcher:v1"
		}},
	} {
		h := goldenHandler()
		tc.edit(&h)
		objs, err := deploy.HandlerObjects(h)
		assert.NilError(t, err)
		golden.Assert(t, render(t, objs), tc.file)
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
		{func(h *deploy.Handler) { h.APIServer, h.MigrationNetwork = "127.0.0.1:6443", "migration-net" },
			`Handler.MigrationNetwork "migration-net": needs the pod network, and Handler.APIServer puts the handler on its node's`},
	} {
		h := goldenHandler()
		tc.edit(&h)
		_, err := deploy.HandlerObjects(h)
		assert.ErrorContains(t, err, tc.want)
	}
}

// virt-api's and virt-controller's objects as a cluster operator would
// apply them (two replicas, disruption budgets), and on a single-machine
// cluster whose apiserver listens on loopback (one replica each, the
// host's network).
func TestDeploymentObjectsGolden(t *testing.T) {
	api := deploy.API{Namespace: "kubevirt", Image: "registry.example/virtkit/virt-api:v1", TLSSecret: "virt-api-certs",
		HandlerClientSecret: "virt-api-handler-client"}
	ctrl := deploy.Controller{Namespace: "kubevirt", Image: "registry.example/virtkit/virt-controller:v1",
		LauncherImage: "registry.example/virtkit/virt-launcher:v1"}
	for _, tc := range []struct {
		file string
		objs func() ([]client.Object, error)
	}{
		{"api.yaml", func() ([]client.Object, error) { return deploy.APIObjects(api) }},
		{"controller.yaml", func() ([]client.Object, error) { return deploy.ControllerObjects(ctrl) }},
		{"api-hostnetwork.yaml", func() ([]client.Object, error) {
			a := api
			a.Replicas, a.Port, a.APIServer, a.PullPolicy = 1, 9443, "127.0.0.1:6443", corev1.PullAlways
			a.Placement = deploy.Placement{NodeSelector: map[string]string{"kubernetes.io/hostname": "n1"}}
			a.HandlerServerName = "virt-handler.kubevirt.svc"
			return deploy.APIObjects(a)
		}},
		{"controller-hostnetwork.yaml", func() ([]client.Object, error) {
			c := ctrl
			c.Replicas, c.MetricsPort, c.ProbePort, c.APIServer = 1, 9444, 9445, "127.0.0.1:6443"
			c.Emulation, c.LauncherCapabilitiesCache = true, "/data/capabilities"
			c.UploadClientCASecret = "virt-api-handler-client"
			c.ExportServerImage, c.ExportCASecret = "registry.example/virtkit/virt-exportserver:v1", "kubevirt-export-ca"
			return deploy.ControllerObjects(c)
		}},
		{"metrics.yaml", func() ([]client.Object, error) { return deploy.MetricsObjects("kubevirt") }},
		{"exportproxy.yaml", func() ([]client.Object, error) {
			return deploy.ExportProxyObjects(deploy.ExportProxy{Namespace: "kubevirt", Image: "registry.example/virtkit/virt-exportproxy:v1",
				TLSSecret: "kubevirt-exportproxy-certs", ExportCASecret: "kubevirt-export-ca"})
		}},
		{"operator.yaml", func() ([]client.Object, error) {
			objs, err := deploy.OperatorObjects(deploy.Operator{Namespace: "kubevirt", Image: "registry.example/virtkit/virt-operator:v1"})
			// The KubeVirt CRD is the generated file in crds/.
			return slices.DeleteFunc(objs, func(o client.Object) bool { return o.GetName() == "kubevirts.kubevirt.io" }), err
		}},
	} {
		objs, err := tc.objs()
		assert.NilError(t, err, tc.file)
		golden.Assert(t, render(t, objs), tc.file)
	}
}

// A placement's node affinity replaces none of the daemons' own spreading
// over nodes, unless it brings pod anti-affinity of its own.
func TestPlacementAffinity(t *testing.T) {
	nodeAffinity := &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: "example.com/infra", Operator: corev1.NodeSelectorOpExists}}}}}}
	objs, err := deploy.ControllerObjects(deploy.Controller{Namespace: "kubevirt", Image: "i", LauncherImage: "l",
		Placement: deploy.Placement{Affinity: &corev1.Affinity{NodeAffinity: nodeAffinity}}})
	assert.NilError(t, err)
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok {
			a := d.Spec.Template.Spec.Affinity
			assert.DeepEqual(t, a.NodeAffinity, nodeAffinity)
			assert.Assert(t, a.PodAntiAffinity != nil, "the replicas' spreading was dropped")
		}
	}
}

func TestOperatorObjects(t *testing.T) {
	objs, err := deploy.OperatorObjects(deploy.Operator{Namespace: "kubevirt", Image: "i"})
	assert.NilError(t, err)
	assert.Equal(t, objs[0].GetObjectKind().GroupVersionKind().Kind, "Namespace")
	assert.Equal(t, objs[1].GetName(), "kubevirts.kubevirt.io")
	operatorArgs := func(objs []client.Object) []string {
		for _, o := range objs {
			if d, ok := o.(*appsv1.Deployment); ok {
				return d.Spec.Template.Spec.Containers[0].Args
			}
		}
		t.Fatal("no Deployment")
		return nil
	}
	assert.Assert(t, !slices.Contains(operatorArgs(objs), "--emulation"))
	objs, err = deploy.OperatorObjects(deploy.Operator{Namespace: "kubevirt", Image: "i", Emulation: true})
	assert.NilError(t, err)
	assert.Assert(t, slices.Contains(operatorArgs(objs), "--emulation"))
	_, err = deploy.OperatorObjects(deploy.Operator{Replicas: -2})
	for _, f := range []string{"Operator.Namespace: required", "Operator.Image: required", "Operator.Replicas -2: must be positive"} {
		assert.ErrorContains(t, err, f)
	}
}

func TestDeploymentObjectsRefusals(t *testing.T) {
	_, err := deploy.APIObjects(deploy.API{})
	for _, f := range []string{"API.Namespace: required", "API.Image: required", "API.TLSSecret: required", "API.HandlerClientSecret: required"} {
		assert.ErrorContains(t, err, f)
	}
	_, err = deploy.ControllerObjects(deploy.Controller{})
	for _, f := range []string{"Controller.Namespace: required", "Controller.Image: required", "Controller.LauncherImage: required"} {
		assert.ErrorContains(t, err, f)
	}
	_, err = deploy.ExportProxyObjects(deploy.ExportProxy{Port: 70000})
	for _, f := range []string{"ExportProxy.Namespace: required", "ExportProxy.Image: required", "ExportProxy.TLSSecret: required",
		"ExportProxy.ExportCASecret: required", "ExportProxy.Port 70000: not a port"} {
		assert.ErrorContains(t, err, f)
	}
	_, err = deploy.APIObjects(deploy.API{Namespace: "k", Image: "i", TLSSecret: "s", HandlerClientSecret: "c", Replicas: -1, Port: 65536,
		APIServer: "localhost"})
	for _, f := range []string{"API.Replicas -1: must be positive", "API.Port 65536: not a port", `API.APIServer "localhost": want host:port`} {
		assert.ErrorContains(t, err, f)
	}
	_, err = deploy.ControllerObjects(deploy.Controller{Namespace: "k", Image: "i", LauncherImage: "l", LauncherCapabilitiesCache: "cache",
		MetricsPort: -1, ExportServerImage: "e"})
	for _, f := range []string{`Controller.LauncherCapabilitiesCache "cache": must be absolute`, "Controller.MetricsPort -1: not a port",
		`Controller.ExportServerImage "e" and ExportCASecret "": set both or neither`} {
		assert.ErrorContains(t, err, f)
	}
}

// The daemons' ServiceAccounts are KubeVirt's, the users virt-api lets
// change a VMI's spec.
func TestPrivilegedUsers(t *testing.T) {
	assert.DeepEqual(t, deploy.PrivilegedUsers("kv"), []string{"system:serviceaccount:kv:kubevirt-handler",
		"system:serviceaccount:kv:kubevirt-controller", "system:serviceaccount:kv:kubevirt-apiserver"})
}

// render is objs as one YAML stream.
func render(t *testing.T, objs []client.Object) string {
	t.Helper()
	var b bytes.Buffer
	for _, o := range objs {
		y, err := yaml.Marshal(o)
		assert.NilError(t, err)
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.String()
}
