package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/nodehealth"
	"github.com/virtkit/virtkit/internal/freeport"
	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/local/cluster"
	"github.com/virtkit/virtkit/local/registry"
	"github.com/virtkit/virtkit/virt/domain"
	domainlibvirt "github.com/virtkit/virtkit/virt/domain/libvirt"
)

// GuestRepoTag is the repository and tag the test guest is pushed under in
// the cluster's registry.
const GuestRepoTag = "virtkit/test-guest:latest"

// ClientQPS and ClientBurst are the rate of Cluster.Client.
const (
	ClientQPS   = 100
	ClientBurst = 200
)

// StopTimeout bounds Stop when its context has no deadline of its own.
const StopTimeout = 3 * time.Minute

// Options says what cluster to start.
type Options struct {
	// Repo is the checkout root: its _output holds bin/ (the control
	// plane and virt-launcher), cni/bin and the test guest (required).
	Repo string
	// DataDir is the cluster's data directory, which must be empty or
	// absent; default a fresh one under /tmp named after DataPrefix.
	// Stop removes it unless Keep.
	DataDir string
	// DataPrefix names the default data directory (default "vkl-").
	// Keep it short: unix socket paths under it are limited to 107 bytes.
	DataPrefix string
	// Keep leaves the data directory (the components' logs) after Stop.
	Keep bool
	// Nodes names the local nodes (required): names of the caller's own,
	// so that the cluster runs beside another virt-local (`make run`).
	Nodes []string
	// HollowNodes names hollow nodes (cluster.Config.HollowNodes), which
	// boot nothing: for scale tests. With them, Nodes may be empty.
	HollowNodes []string
	// KubeletNode names a real node (a real kubelet with containerd) to
	// start as well, from _output's kubelet, containerd and images;
	// default none.
	KubeletNode string
	// Split runs the daemons as processes of their own (cluster.Config.Split).
	Split bool
	// Operator leaves installing virtkit to virt-operator
	// (cluster.Config.Operator): with KubeletNode and no Nodes.
	Operator bool
	// Metrics and MetricsAddr are passed to cluster.Config.
	Metrics     *prometheus.Registry
	MetricsAddr string
	// HeartbeatInterval and NodeHealth are passed to cluster.Config: short
	// ones for tests of a node's failure.
	HeartbeatInterval time.Duration
	NodeHealth        nodehealth.Options
	// Logger receives virt-local's progress.
	Logger logr.Logger
}

// Cluster is a running virt-local with the test guest in its registry.
type Cluster struct {
	*cluster.Cluster
	// DataDir is the cluster's data directory.
	DataDir string
	// Guest is the test guest's build.
	Guest testguest.Artifacts
	// GuestImage is the containerDisk reference of the test guest in the
	// cluster's registry.
	GuestImage string
	// Client reads, writes and watches the cluster with virtkit's scheme,
	// as the administrator, at ClientQPS.
	Client client.WithWatch

	removeData bool
}

// Start builds (or finds) the test guest, starts virt-local as o says,
// pushes the guest and connects a client. On error nothing is left running.
func Start(ctx context.Context, o Options) (_ *Cluster, err error) {
	switch {
	case o.Repo == "":
		return nil, errors.New("localcluster: Options.Repo: required")
	case len(o.Nodes) == 0 && len(o.HollowNodes) == 0 && !o.Operator:
		return nil, errors.New("localcluster: Options.Nodes: at least one node")
	}
	guest, err := testguest.Build(ctx, o.Repo)
	if err != nil {
		return nil, fmt.Errorf("localcluster: test guest: %w", err)
	}
	lc := &Cluster{DataDir: o.DataDir, Guest: guest, removeData: !o.Keep}
	if lc.DataDir == "" {
		prefix := o.DataPrefix
		if prefix == "" {
			prefix = "vkl-"
		}
		if lc.DataDir, err = os.MkdirTemp("/tmp", prefix); err != nil {
			return nil, fmt.Errorf("localcluster: data directory: %w", err)
		}
	}
	defer func() {
		if err != nil && lc.removeData {
			os.RemoveAll(lc.DataDir)
		}
	}()
	ports, err := freeport.Range(6)
	if err != nil {
		return nil, fmt.Errorf("localcluster: ports: %w", err)
	}
	out := filepath.Join(o.Repo, "_output")
	lc.Cluster, err = cluster.Up(ctx, cluster.Config{
		DataDir: lc.DataDir, BinDir: filepath.Join(out, "bin"), CNIBinDir: filepath.Join(out, "cni", "bin"),
		APIServerPort: ports, EtcdPort: ports + 1, VirtAPIPort: ports + 4, ExportProxyPort: ports + 5, RegistryAddr: "127.0.0.1:0",
		Nodes: o.Nodes, HollowNodes: o.HollowNodes,
		KubeletNode: o.KubeletNode, Split: o.Split, Operator: o.Operator, ContainerdBinDir: filepath.Join(out, "containerd", "bin"), ImagesDir: filepath.Join(out, "images"),
		Connector:         func(ctx context.Context, uri string) (domain.Manager, error) { return domainlibvirt.New(ctx, uri) },
		Metrics:           o.Metrics,
		MetricsAddr:       o.MetricsAddr,
		Logger:            o.Logger,
		HeartbeatInterval: o.HeartbeatInterval, NodeHealth: o.NodeHealth,
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, lc.down(context.Background()))
		}
	}()
	lc.GuestImage = lc.Registry() + "/" + GuestRepoTag
	if _, _, err := registry.PushContainerDisk(ctx, lc.GuestImage, guest.Disk); err != nil {
		return nil, fmt.Errorf("localcluster: pushing the test guest as %s: %w", lc.GuestImage, err)
	}
	// A benchmark creates 10 VMIs a second and more: client-go's default
	// of 5 requests a second would be what it measured.
	rc := lc.RESTConfig()
	rc.QPS, rc.Burst = ClientQPS, ClientBurst
	if lc.Client, err = client.NewWithWatch(rc, client.Options{Scheme: scheme.New()}); err != nil {
		return nil, fmt.Errorf("localcluster: client: %w", err)
	}
	return lc, nil
}

// Stop brings the cluster down (guests stop, nodes and control plane
// end), within StopTimeout unless ctx ends sooner, and removes its data
// directory unless Options.Keep.
func (c *Cluster) Stop(ctx context.Context) error {
	err := c.down(ctx)
	if c.removeData {
		if rerr := os.RemoveAll(c.DataDir); rerr != nil {
			err = errors.Join(err, fmt.Errorf("localcluster: removing %s: %w", c.DataDir, rerr))
		}
	}
	return err
}

func (c *Cluster) down(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, StopTimeout)
	defer cancel()
	return c.Down(ctx)
}
