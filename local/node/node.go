package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
	vknode "github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Node is a running local node. Start one with Start; Stop ends it.
type Node struct {
	cfg    Config
	p      *Provider
	api    *kubeletServer // nil without WithKubeletAPI
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// Start registers the node (or takes over its Node object) and starts
// running the pods the scheduler binds to it; it returns once the node is
// registered and its pod controller runs. Pods a previous run of the node
// left in Config.StateDir are cleaned up and reported first (see
// NewProvider). On failure nothing is left running.
func Start(ctx context.Context, cfg Config, client kubernetes.Interface, opts ...Option) (*Node, error) {
	p, err := NewProvider(ctx, cfg, client, opts...)
	if err != nil {
		return nil, err
	}
	cfg = p.cfg
	spec := nodeObject(cfg, readHostFacts(cfg.StateDir, p.hostIP))
	var apiSrv *kubeletServer
	if a := p.opts.kubeletAPI; a != nil {
		if apiSrv, err = serveKubeletAPI(p, a, p.hostIP); err != nil {
			return nil, errors.Join(err, p.Close())
		}
		spec.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(apiSrv.port)
	}
	vk, err := nodeutil.NewNode(cfg.Name,
		func(nodeutil.ProviderConfig) (nodeutil.Provider, vknode.NodeProvider, error) {
			return p, nodeProvider{}, nil
		},
		func(c *nodeutil.NodeConfig) error {
			c.Client = client
			c.NodeSpec = *spec
			c.NumWorkers = 4
			c.InformerResyncPeriod = time.Minute
			return nil
		})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("node %s: %w", cfg.Name, err), apiSrv.close(), p.Close())
	}
	runCtx, cancel := context.WithCancel(vklog.WithLogger(context.WithoutCancel(ctx), vkLogger{cfg.Logger.WithName("virtual-kubelet")}))
	n := &Node{cfg: cfg, p: p, api: apiSrv, cancel: cancel, done: make(chan struct{})}
	go func() {
		n.err = vk.Run(runCtx)
		close(n.done)
	}()
	if err := vk.WaitReady(ctx, 0); err != nil {
		return nil, errors.Join(fmt.Errorf("node %s: not ready: %w", cfg.Name, err), n.Stop(context.Background()))
	}
	p.reportRecovered()
	cfg.Logger.Info("node ready", "node", cfg.Name, "pods", cfg.PodCIDR, "bridge", cfg.Bridge, "state", cfg.StateDir)
	return n, nil
}

// Config is the configuration the node runs with, defaults applied.
func (n *Node) Config() Config { return n.cfg }

// Provider is the node's pod provider.
func (n *Node) Provider() *Provider { return n.p }

// Stop stops every pod as a deletion would (SIGTERM, their grace period,
// SIGKILL) but leaves them in the API, Failed with reason Terminated; then
// stops the node's controllers and removes its bridge. The Node object
// stays (it turns NotReady when its lease expires). ctx bounds the wait
// for the pods.
func (n *Node) Stop(ctx context.Context) error {
	errs := []error{n.api.close(), n.p.Shutdown(ctx)}
	n.waitReported(ctx)
	n.cancel()
	<-n.done
	if n.err != nil && !errors.Is(n.err, context.Canceled) {
		errs = append(errs, n.err)
	}
	errs = append(errs, n.p.Close())
	return errors.Join(errs...)
}

// Crash stops the node as a machine that fails does, for failure tests:
// the node's controllers stop first, so that nothing more reaches the API
// (its lease and its pods' statuses stay as they were, and the Node turns
// NotReady when the lease expires); then its pods' processes are ended
// (SIGTERM, their grace period, SIGKILL) and their networks and files
// removed, unreported. The bridge stays, for the node to start again on
// the same Config, which reports those pods as a restarted node does.
// ctx bounds the wait for the pods.
func (n *Node) Crash(ctx context.Context) error {
	n.cancel()
	<-n.done
	n.p.silence()
	errs := []error{n.api.close(), n.p.Shutdown(ctx), n.p.closeProcesses()}
	if n.err != nil && !errors.Is(n.err, context.Canceled) {
		errs = append(errs, n.err)
	}
	return errors.Join(errs...)
}

// waitReported waits (10 s at most) until the API shows each of the
// node's pods in its terminal phase, so that stopping the controllers does
// not lose the last status updates.
func (n *Node) waitReported(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	pods, _ := n.p.GetPods(ctx)
	for _, want := range pods {
		for {
			got, err := n.p.client.CoreV1().Pods(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil || got.UID != want.UID || got.Status.Phase == want.Status.Phase {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// nodeProvider keeps the node Ready: virtual-kubelet renews its lease and
// refreshes its conditions' heartbeats while Ping answers.
type nodeProvider struct{}

func (nodeProvider) Ping(context.Context) error                           { return nil }
func (nodeProvider) NotifyNodeStatus(context.Context, func(*corev1.Node)) {}
