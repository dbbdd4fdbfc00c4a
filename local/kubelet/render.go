package kubelet

import (
	"bytes"
	"strconv"
	"strings"
	"text/template"

	"sigs.k8s.io/yaml"
)

// containerdTemplate is containerd 2.4's configuration (version 4): every
// path below the node's folder, no imports from /etc, the CRI plugin with
// runc (cgroupfs) and the node's CNI configuration, registries configured
// through hosts.toml files. Plugins that would use fixed host paths (opt,
// NRI, the image verifier) or block devices are off.
var containerdTemplate = template.Must(template.New("containerd").Funcs(template.FuncMap{"q": strconv.Quote}).Parse(`version = 4
root = {{q .Root}}
state = {{q .State}}
oom_score = 0
imports = []
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.nri.v1.nri", "io.containerd.image-verifier.v1.bindir", "io.containerd.snapshotter.v1.blockfile", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp"]

[debug]
  level = "info"

[plugins]
  [plugins."io.containerd.server.v1.grpc"]
    address = {{q .Socket}}
  [plugins."io.containerd.server.v1.ttrpc"]
    address = {{q (print .Socket ".ttrpc")}}
  [plugins."io.containerd.server.v1.metrics"]
    address = ""

  [plugins."io.containerd.cri.v1.images"]
    snapshotter = "overlayfs"
    [plugins."io.containerd.cri.v1.images".pinned_images]
      sandbox = {{q .SandboxImage}}
    [plugins."io.containerd.cri.v1.images".registry]
      config_path = {{q .CertsDir}}

  [plugins."io.containerd.transfer.v1.local"]
    config_path = {{q .CertsDir}}

  [plugins."io.containerd.cri.v1.runtime"]
    enable_selinux = false
    restrict_oom_score_adj = true
    [plugins."io.containerd.cri.v1.runtime".containerd]
      default_runtime_name = "runc"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
          BinaryName = {{q .Runc}}
          Root = {{q (print .State "/runc")}}
          SystemdCgroup = false
    [plugins."io.containerd.cri.v1.runtime".cni]
      bin_dirs = [{{q .CNIBinDir}}]
      conf_dir = {{q .CNIConfDir}}
      max_conf_num = 1

  [plugins."io.containerd.grpc.v1.cri"]
    disable_tcp_service = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
`))

// renderContainerd renders containerd's configuration for c.
func renderContainerd(c Config) ([]byte, error) {
	p := paths{c.Dir}
	var b bytes.Buffer
	err := containerdTemplate.Execute(&b, map[string]string{
		"Root": p.containerdRoot(), "State": p.containerdState(), "Socket": p.containerdSocket(),
		"SandboxImage": c.SandboxImage, "CertsDir": p.certsDir(), "Runc": c.Runc,
		"CNIBinDir": c.CNIBinDir, "CNIConfDir": p.cniConfDir(),
	})
	return b.Bytes(), err
}

// renderHostsTOML is containerd's hosts.toml of a plain-HTTP registry.
func renderHostsTOML(hostPort string) []byte {
	url := "http://" + hostPort
	return []byte("server = " + strconv.Quote(url) + "\n\n[host." + strconv.Quote(url) + "]\n  capabilities = [\"pull\", \"resolve\"]\n")
}

// cgroupRoot is the cgroup under which the kubelet puts its pods.
func cgroupRoot(node string) string { return "/virtkit-" + node }

// renderKubeletConfig renders the KubeletConfiguration for c: the node's
// API on NodeIP with webhook authentication and authorization (no
// anonymous requests, no read-only port), cgroupfs under its own cgroup
// root, the node's containerd, eviction thresholds that a small shared
// machine does not cross.
func renderKubeletConfig(c Config) ([]byte, error) {
	p := paths{c.Dir}
	cfg := map[string]any{
		"apiVersion":         "kubelet.config.k8s.io/v1beta1",
		"kind":               "KubeletConfiguration",
		"address":            c.NodeIP,
		"port":               c.KubeletPort,
		"readOnlyPort":       0,
		"healthzBindAddress": "127.0.0.1",
		"healthzPort":        0,
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": true},
			"x509":      map[string]any{"clientCAFile": c.ControlPlane.PKI().CACert()},
		},
		"authorization":                 map[string]any{"mode": "Webhook"},
		"cgroupDriver":                  "cgroupfs",
		"cgroupRoot":                    cgroupRoot(c.NodeName),
		"cgroupsPerQOS":                 true,
		"failCgroupV1":                  false,
		"enforceNodeAllocatable":        []string{"pods"},
		"failSwapOn":                    false,
		"containerRuntimeEndpoint":      "unix://" + p.containerdSocket(),
		"podLogsDir":                    p.podLogs(),
		"clusterDomain":                 "cluster.local",
		"resolvConf":                    "/etc/resolv.conf",
		"serializeImagePulls":           false,
		"rotateCertificates":            false,
		"serverTLSBootstrap":            false,
		"imageGCHighThresholdPercent":   100,
		"imageGCLowThresholdPercent":    99,
		"evictionHard":                  map[string]string{"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%"},
		"protectKernelDefaults":         false,
		"localStorageCapacityIsolation": true,
	}
	return yaml.Marshal(cfg)
}

// kubeletArgs are the kubelet's flags for c.
func kubeletArgs(c Config) []string {
	p := paths{c.Dir}
	return []string{
		"--config=" + p.kubeletConfig(),
		"--kubeconfig=" + p.kubeconfig(),
		"--root-dir=" + p.kubeletRoot(),
		"--cert-dir=" + p.kubeletRoot() + "/pki",
		"--hostname-override=" + c.NodeName,
		"--node-ip=" + c.NodeIP,
		"--v=2",
	}
}

// nodeUser is the kubelet's user: the Node authorizer's system:node:NAME.
func nodeUser(c Config) string { return "system:node:" + strings.ToLower(c.NodeName) }
