package cluster

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/virtkit/virtkit/controllers/handler"
	"github.com/virtkit/virtkit/controllers/nodehealth"
	"github.com/virtkit/virtkit/local/controlplane"
	"github.com/virtkit/virtkit/local/kubelet"
	"github.com/virtkit/virtkit/local/node"
	"github.com/virtkit/virtkit/local/registry"
)

// Config is what a local cluster is. The zero value of an optional field
// takes its default.
type Config struct {
	// DataDir holds all state: controlplane/ (etcd, PKI, kubeconfigs,
	// logs), registry/ (the registry's images), nodes/<name>/ (pods, and
	// under images/ the image volumes' images, unpacked),
	// handlers/<name>/ and volumes/ (the folders behind
	// PersistentVolumes) (required).
	DataDir string
	// BinDir holds the control plane binaries and virt-launcher (required;
	// `make kube-bins daemons` builds them into _output/bin).
	BinDir string
	// CNIBinDir holds the CNI plugins (`make cni-bins`: _output/cni/bin) (required).
	CNIBinDir string
	// RegistryAddr is the loopback host:port of the cluster's OCI registry
	// (local/registry, its images under DataDir/registry), which the nodes
	// pull image volumes (containerDisks, kernel-boot images) from;
	// references name it as localhost:PORT or 127.0.0.1:PORT. Port 0 picks
	// a free one (Cluster.Registry tells which). Default 127.0.0.1:5000.
	RegistryAddr string
	// Nodes names the local nodes; default one, "local" (none with
	// Operator). Each gets a host
	// bridge and a /24 of 10.88.0.0/16 of its own, distinct from every
	// other address range on this machine (other virt-locals included) and
	// kept in DataDir/networks.json while it stays free
	// (Cluster.NodeNetworks); the host routes between the bridges, so pods
	// of different nodes reach each other.
	Nodes []string
	// HollowNodes names nodes that boot nothing, for scale tests (package
	// local/hollow, as kubemark's hollow nodes): their launcher pods run
	// in this process on fakes of libvirt, the pod network and storage,
	// while the apiserver, the controllers, virt-api and each hollow
	// node's handler (always in this process, also with Split) do their
	// real work. They declare HollowCapacity, not the host's. With
	// HollowNodes and no Nodes, there is no default local node.
	HollowNodes []string
	// KubeletNode, when set, names a real node started after the local
	// ones (local/kubelet): a real kubelet with containerd and runc, whose
	// pods are real containers from images pulled from the cluster's
	// registry. It gets a bridge and pod range as the local nodes do, and
	// its state lives under DataDir/kubelets/NAME. Default: none.
	KubeletNode string
	// ContainerdBinDir holds containerd, its runc shim and ctr (`make
	// containerd-bins`: _output/containerd/bin); required with KubeletNode.
	ContainerdBinDir string
	// ImagesDir is the OCI image layout of `make images` (_output/images);
	// with KubeletNode its pause image is pushed to the registry as the
	// node's sandbox image.
	ImagesDir string
	// APIServerPort, EtcdPort (and the two ports after it), VirtAPIPort
	// and ExportProxyPort (the export proxy, which serves exports'
	// external links) are loopback ports; defaults 6443, 2379, 8443 and
	// 8444.
	APIServerPort, EtcdPort, VirtAPIPort, ExportProxyPort int
	// Connector connects a handler to a launcher's libvirt (required):
	// virt/domain/libvirt's New.
	Connector handler.Connector
	// LauncherImage names the launcher in launcher pods; the local node
	// runs BinDir/virt-launcher for it. Default "virtkit/virt-launcher:local".
	LauncherImage string
	// ImporterImage names the importer in DataVolume importer pods; the
	// local node runs BinDir/virt-importer for it. Default
	// "virtkit/virt-importer:local".
	ImporterImage string
	// ExportServerImage names the server in VirtualMachineExport server
	// pods; the local node runs BinDir/virt-exportserver for it. Default
	// "virtkit/virt-exportserver:local".
	ExportServerImage string
	// Metrics receives the components' series (each component's requests
	// to the apiserver, kubevirt_rest_client_requests_total; the VMI, VM
	// and migration counts of the controllers; the guests' counters of the
	// handlers; virt-api's calls and streams: docs/metrics.md); default a
	// registry of the cluster's own with the Go and process collectors.
	// Cluster.Metrics returns it.
	Metrics *prometheus.Registry
	// MetricsAddr is the host:port where /metrics is served over plain
	// HTTP: Metrics' series and controller-runtime's (reconcile counts and
	// latencies, workqueue depth), gathered together. Port 0 picks a free
	// one (Cluster.MetricsAddr tells which); "0" serves none. Default
	// 127.0.0.1:0: loopback only, as every port of virt-local.
	MetricsAddr string
	// Split runs virt-api, virt-controller and each local node's handler
	// as processes of their own, BinDir's virt-api, virt-controller and
	// virt-handler (`make daemons`), instead of in this process. Each is
	// supervised as a kubelet keeps a container running: started again,
	// after a pause of 1 s doubling to 10 s, whenever it exits, so that one
	// can be killed alone (Cluster.Daemons). virt-controller runs with
	// leader election. Their logs are in DaemonLogDir; their series are not
	// in the cluster's /metrics. Not with KubeletNode, whose daemons are
	// pods already.
	Split bool
	// Operator, with KubeletNode, leaves installing virtkit to
	// virt-operator, as on any cluster: Up starts the registry, the control
	// plane, the volume provisioner and the real node only (no local node,
	// whose handlers would run in this process), pushes the built images
	// and writes the operator's release manifest and a KubeVirt CR for
	// this cluster (Cluster.OperatorManifests, and as files in
	// OperatorManifestDir). Applying them installs virtkit; deleting the CR
	// uninstalls it.
	Operator bool
	// HeartbeatInterval is how often each local node's handler marks its
	// Node (the kubevirt.io/heartbeat annotation); default the handler's,
	// a minute. NodeHealth are virt-controller's node controller's
	// timings: how old a heartbeat may be and how long a node may be
	// NotReady before its VMIs fail; default KubeVirt's. Shorter ones let a
	// test see a node fail (Cluster.CrashNode) in seconds.
	HeartbeatInterval time.Duration
	NodeHealth        nodehealth.Options
	// Logger receives the cluster's progress as Info entries on Logger
	// itself, which virt-local shows on the terminal, and each component's
	// log on a named child of it (Logger.WithName), which virt-local keeps
	// in its log file only.
	Logger logr.Logger
}

func (c Config) withDefaults() (Config, error) {
	switch {
	case c.DataDir == "":
		return c, fmt.Errorf("cluster: Config.DataDir: required")
	case c.BinDir == "":
		return c, fmt.Errorf("cluster: Config.BinDir: required")
	case c.CNIBinDir == "":
		return c, fmt.Errorf("cluster: Config.CNIBinDir: required")
	case c.Connector == nil:
		return c, fmt.Errorf("cluster: Config.Connector: required")
	}
	if c.Split && c.KubeletNode != "" {
		return c, fmt.Errorf("cluster: Config.Split: not with Config.KubeletNode %q, whose daemons run as its pods", c.KubeletNode)
	}
	if c.Operator && (c.KubeletNode == "" || len(c.Nodes) > 0 || c.Split) {
		return c, fmt.Errorf("cluster: Config.Operator: needs Config.KubeletNode and neither local nodes nor Config.Split: the operator installs the daemons as pods")
	}
	if c.KubeletNode != "" && (c.ContainerdBinDir == "" || c.ImagesDir == "") {
		return c, fmt.Errorf("cluster: Config.KubeletNode %q: needs Config.ContainerdBinDir and Config.ImagesDir", c.KubeletNode)
	}
	var err error
	for _, p := range []*string{&c.DataDir, &c.BinDir, &c.CNIBinDir} {
		if *p, err = filepath.Abs(*p); err != nil {
			return c, fmt.Errorf("cluster: %w", err)
		}
	}
	if c.RegistryAddr == "" {
		c.RegistryAddr = registry.DefaultAddr
	}
	if c.Operator && len(c.HollowNodes) > 0 {
		return c, fmt.Errorf("cluster: Config.HollowNodes: not with Config.Operator, which installs the handlers as pods")
	}
	if len(c.Nodes) == 0 && len(c.HollowNodes) == 0 && !c.Operator {
		c.Nodes = []string{"local"}
	}
	seen := map[string]bool{c.KubeletNode: c.KubeletNode != ""}
	for _, f := range []struct {
		field string
		names []string
	}{{"Nodes", c.Nodes}, {"HollowNodes", c.HollowNodes}} {
		for i, n := range f.names {
			if seen[n] {
				return c, fmt.Errorf("cluster: Config.%s[%d] %q: named twice", f.field, i, n)
			}
			seen[n] = true
		}
	}
	if c.VirtAPIPort == 0 {
		c.VirtAPIPort = 8443
	}
	if c.ExportProxyPort == 0 {
		c.ExportProxyPort = 8444
	}
	if c.MetricsAddr == "" {
		c.MetricsAddr = DefaultMetricsAddr
	}
	if c.LauncherImage == "" {
		c.LauncherImage = "virtkit/virt-launcher:local"
	}
	if c.ImporterImage == "" {
		c.ImporterImage = "virtkit/virt-importer:local"
	}
	if c.ExportServerImage == "" {
		c.ExportServerImage = "virtkit/virt-exportserver:local"
	}
	if c.Logger.GetSink() == nil {
		c.Logger = logr.Discard()
	}
	return c, nil
}

// CapabilitiesCacheDir is the libvirt capability cache every launcher of
// the cluster shares (controllers.Config.LauncherCapabilitiesCache).
func (c Config) CapabilitiesCacheDir() string { return filepath.Join(c.DataDir, "cache", "libvirt") }

// OperatorManifestDir holds the release manifests of Config.Operator:
// deploy.OperatorManifestFile and deploy.KubeVirtCRFile (deploy.WriteRelease).
func (c Config) OperatorManifestDir() string { return filepath.Join(c.DataDir, "deploy") }

// DaemonLogDir holds the log of each daemon process of split mode,
// <name>.log.
func (c Config) DaemonLogDir() string { return filepath.Join(c.DataDir, "daemons") }

// ExportProxyHost is where the export proxy serves: its loopback port.
func (c Config) ExportProxyHost() string { return "127.0.0.1:" + strconv.Itoa(c.ExportProxyPort) }

// UploadProxyURL is where virt-api serves the upload proxy: its loopback
// port.
func (c Config) UploadProxyURL() string {
	return "https://127.0.0.1:" + strconv.Itoa(c.VirtAPIPort)
}

// Kubeconfig is the administrator's kubeconfig of a cluster with this data directory.
func (c Config) Kubeconfig() string { return filepath.Join(c.controlPlaneDir(), "kubeconfig") }

// PKI holds the cluster's CA and the certificates virt-local issued with
// it, among them each local node's migration certificate
// (MigrationCertName).
func (c Config) PKI() controlplane.PKI {
	return controlplane.Config{DataDir: c.controlPlaneDir()}.PKI()
}

// controlPlaneDir is the control plane's data directory.
func (c Config) controlPlaneDir() string { return filepath.Join(c.DataDir, "controlplane") }

// MigrationCertName names local node's migration certificate in the PKI
// (PKI().Cert, PKI().Key): certs.NodeRequest(node), which its handler
// presents to the other nodes' when a guest migrates.
func MigrationCertName(node string) string { return "virt-handler-migration-" + node }

// NodeDir is the folder of local node name.
func (c Config) NodeDir(name string) string { return filepath.Join(c.DataDir, "nodes", name) }

// kubeletDir is the folder of the real node name (Config.KubeletNode).
func (c Config) kubeletDir(name string) string { return filepath.Join(c.DataDir, "kubelets", name) }

// PodsDir is the pods folder of node name, the real node's (KubeletNode)
// kubelet's or a local node's laid out as a kubelet's: a launcher pod's
// folder is controllers/vmi.PodFolder(PodsDir, pod).
func (c Config) PodsDir(name string) string {
	if name == c.KubeletNode {
		return kubelet.Config{Dir: c.kubeletDir(name)}.PodsDir()
	}
	return node.Config{StateDir: c.NodeDir(name)}.PodsDir()
}
