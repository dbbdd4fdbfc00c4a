package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Provider runs the pods bound to one node: the virtual-kubelet provider
// (nodeutil.Provider and node.PodNotifier). Node wires it into a
// virtual-kubelet node; an integrator with a virtual-kubelet node of its own
// can use it directly.
//
// Its methods return at once: each pod is run by a goroutine of its own,
// which reports status changes through the NotifyPods callback.
type Provider struct {
	cfg    Config
	opts   options
	client kubernetes.Interface
	log    logr.Logger
	hostIP string
	// ctx lives as long as the provider; pods run under it.
	ctx context.Context

	mu     sync.Mutex
	pods   map[string]*podRun // by namespace/name
	notify func(*corev1.Pod)
	// recovered are the pods found in StateDir at start, reported once
	// NotifyPods is called.
	recovered []*podRun
	closers   []func() error
	csi       *csiClients
	// closeRunner is the default HostRunner's Close (nil with another
	// runner): what Crash closes, leaving the network.
	closeRunner func() error
}

var (
	_ nodeutil.Provider = (*Provider)(nil)
)

// NewProvider prepares StateDir and recovers the pods a previous run of the
// node left there: processes still running are killed, networks and
// volumes removed, and the pods reported Failed (reason NodeRestarted) or
// with the final status they had reached. client reads configMaps, secrets,
// PVCs and PVs, requests service account tokens and removes deleted pods.
func NewProvider(ctx context.Context, cfg Config, client kubernetes.Interface, opts ...Option) (*Provider, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if client == nil {
		return nil, errors.New("node: a Kubernetes client is required")
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	var closers []func() error
	if o.network == nil {
		if cfg.CNIBinDir == "" {
			return nil, errors.New("node: Config.CNIBinDir: required (or WithNetwork)")
		}
		c := &CNI{BinDir: cfg.CNIBinDir, Network: "virt-local-" + cfg.Name, Bridge: cfg.Bridge,
			Subnet: cfg.PodCIDR, DataDir: filepath.Join(cfg.StateDir, "cni"), Env: o.env}
		o.network = c
		closers = append(closers, c.Close)
	}
	var closeRunner func() error
	if o.runner == nil {
		h := NewHostRunner()
		o.runner = h
		closeRunner = h.Close
		closers = append(closers, h.Close)
	}
	if o.images == nil {
		o.images = &RegistryImageStore{Registry: cfg.Registry, Dir: cfg.ImageDir, Logger: cfg.Logger.WithName("images")}
	}
	if err := os.MkdirAll(cfg.PodsDir(), 0o700); err != nil {
		return nil, errors.Join(fmt.Errorf("node: Config.StateDir: %w", err), closeAll(closers))
	}
	unshare, err := sharePodsDir(cfg.PodsDir(), filepath.Join(cfg.StateDir, "pods.shared"))
	if err != nil {
		return nil, errors.Join(err, closeAll(closers))
	}
	closers = append(closers, unshare)
	csiClients := &csiClients{endpoints: o.csiDrivers}
	closers = append(closers, csiClients.Close)
	p := &Provider{cfg: cfg, opts: o, client: client, log: cfg.Logger, hostIP: cfg.InternalIP,
		ctx: context.WithoutCancel(ctx), pods: map[string]*podRun{}, closers: closers, closeRunner: closeRunner, csi: csiClients}
	if p.hostIP == "" {
		p.hostIP = hostIP()
	}
	if err := p.recover(ctx); err != nil {
		return nil, errors.Join(err, p.Close())
	}
	return p, nil
}

// Close releases what NewProvider made: the default HostRunner's thread
// (pod processes still running get SIGKILL) and the default CNI network's
// bridge. Call Shutdown first.
func (p *Provider) Close() error {
	err := closeAll(p.closers)
	p.closers = nil
	return err
}

// closeAll calls closers, last first.
func closeAll(closers []func() error) error {
	var errs []error
	for i := len(closers) - 1; i >= 0; i-- {
		errs = append(errs, closers[i]())
	}
	return errors.Join(errs...)
}

func podKey(namespace, name string) string { return namespace + "/" + name }

// CreatePod starts running pod. A pod of the same name that is still on
// the node (deleted from the API, being stopped) is stopped and removed
// first.
func (p *Provider) CreatePod(_ context.Context, pod *corev1.Pod) error {
	key := podKey(pod.Namespace, pod.Name)
	p.mu.Lock()
	defer p.mu.Unlock()
	prev := p.pods[key]
	if prev != nil && prev.uid == pod.UID {
		return nil
	}
	r := newPodRun(p, pod)
	p.pods[key] = r
	go func() {
		if prev != nil {
			prev.delete(gracePeriod(prev.snapshot()))
			<-prev.done
		}
		r.run(p.ctx)
	}()
	return nil
}

// UpdatePod takes the pod's new labels and annotations (nothing else of a
// running pod can change); a pod with another UID replaces the one of the
// same name, as CreatePod does.
func (p *Provider) UpdatePod(ctx context.Context, pod *corev1.Pod) error {
	r := p.get(pod.Namespace, pod.Name)
	if r == nil {
		return errdefs.NotFoundf("pod %s/%s is not on this node", pod.Namespace, pod.Name)
	}
	if r.uid != pod.UID {
		return p.CreatePod(ctx, pod)
	}
	r.updateMeta(pod)
	return nil
}

// DeletePod stops the pod: SIGTERM to each container's process, SIGKILL to
// what is left after the grace period, then its network, mounts and folders
// are removed, the final status reported and the pod deleted from the API.
// It returns at once.
func (p *Provider) DeletePod(_ context.Context, pod *corev1.Pod) error {
	r := p.get(pod.Namespace, pod.Name)
	if r == nil || (pod.UID != "" && r.uid != pod.UID) {
		return errdefs.NotFoundf("pod %s/%s is not on this node", pod.Namespace, pod.Name)
	}
	r.delete(gracePeriod(pod))
	return nil
}

// GetPod returns the pod with its current status.
func (p *Provider) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	r := p.get(namespace, name)
	if r == nil {
		return nil, errdefs.NotFoundf("pod %s/%s is not on this node", namespace, name)
	}
	return r.snapshot(), nil
}

// GetPodStatus returns the pod's current status.
func (p *Provider) GetPodStatus(ctx context.Context, namespace, name string) (*corev1.PodStatus, error) {
	pod, err := p.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

// GetPods returns every pod the node runs or ran and still knows.
func (p *Provider) GetPods(context.Context) ([]*corev1.Pod, error) {
	p.mu.Lock()
	runs := make([]*podRun, 0, len(p.pods))
	for _, r := range p.pods {
		runs = append(runs, r)
	}
	p.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(runs))
	for _, r := range runs {
		out = append(out, r.snapshot())
	}
	return out, nil
}

// NotifyPods registers the callback that receives every status change.
func (p *Provider) NotifyPods(_ context.Context, cb func(*corev1.Pod)) {
	p.mu.Lock()
	p.notify = cb
	p.mu.Unlock()
	go p.reportRecovered()
}

// reportRecovered reports the pods recovered from an earlier run that are
// still known, again: virtual-kubelet drops a report that comes before its
// informers know the pod.
func (p *Provider) reportRecovered() {
	cb := p.notifier()
	if cb == nil {
		return
	}
	p.mu.Lock()
	var runs []*podRun
	for _, r := range p.recovered {
		if p.pods[r.key] == r {
			runs = append(runs, r)
		}
	}
	p.mu.Unlock()
	for _, r := range runs {
		cb(r.snapshot())
	}
}

// Shutdown stops every pod as DeletePod does, without deleting them from
// the API: they end Failed with reason Terminated. It returns when all are
// torn down or ctx ends.
func (p *Provider) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	runs := make([]*podRun, 0, len(p.pods))
	for _, r := range p.pods {
		runs = append(runs, r)
	}
	p.mu.Unlock()
	for _, r := range runs {
		r.shutdown(gracePeriod(r.snapshot()))
	}
	for _, r := range runs {
		select {
		case <-r.done:
		case <-ctx.Done():
			return fmt.Errorf("node: pods still stopping: %w", ctx.Err())
		}
	}
	return nil
}

func (p *Provider) get(namespace, name string) *podRun {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pods[podKey(namespace, name)]
}

// silence stops the pods' status reports: a crashed node reports nothing.
func (p *Provider) silence() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notify = nil
}

// closeProcesses releases the default HostRunner's thread, as Close does,
// and nothing else: the network's bridge stays.
func (p *Provider) closeProcesses() error {
	if p.closeRunner == nil {
		return nil
	}
	close := p.closeRunner
	p.closeRunner = nil
	return close()
}

func (p *Provider) notifier() func(*corev1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.notify
}

// forget drops a deleted pod: its folder, its API object (grace period 0,
// as the kubelet does once a pod's containers ended) and, last, the
// provider's knowledge of it.
func (p *Provider) forget(r *podRun) {
	r.mu.Lock()
	r.gone = true
	r.mu.Unlock()
	if err := removeAllUnmounted(r.dir); err != nil {
		p.log.Error(err, "removing the pod's folder", "pod", r.key)
	}
	zero := int64(0)
	uid := r.uid
	err := p.client.CoreV1().Pods(r.namespace).Delete(p.ctx, r.name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		p.log.Error(err, "deleting the pod from the API", "pod", r.key)
	}
	p.mu.Lock()
	if p.pods[r.key] == r {
		delete(p.pods, r.key)
	}
	p.mu.Unlock()
	p.log.Info("pod removed", "pod", r.key)
}

// gracePeriod is how long a deleted pod's containers get after SIGTERM.
func gracePeriod(pod *corev1.Pod) int64 {
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		return *pod.DeletionGracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		return *pod.Spec.TerminationGracePeriodSeconds
	default:
		return corev1.DefaultTerminationGracePeriodSeconds
	}
}

// GetContainerLogs returns what the container wrote to stdout and stderr.
func (p *Provider) GetContainerLogs(_ context.Context, namespace, podName, containerName string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	r := p.get(namespace, podName)
	if r == nil {
		return nil, errdefs.NotFoundf("pod %s/%s is not on this node", namespace, podName)
	}
	// Only a container of the pod: the name becomes a file name.
	pod, known := r.snapshot(), false
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		known = known || c.Name == containerName
	}
	if !known {
		return nil, errdefs.NotFoundf("pod %s/%s has no container %q", namespace, podName, containerName)
	}
	f, err := os.Open(r.logPath(containerName))
	if err != nil {
		return nil, errdefs.NotFoundf("logs of %s/%s container %s: %v", namespace, podName, containerName, err)
	}
	if opts.LimitBytes > 0 {
		return struct {
			io.Reader
			io.Closer
		}{io.LimitReader(f, int64(opts.LimitBytes)), f}, nil
	}
	return f, nil
}

var errNotSupported = errdefs.InvalidInput("not supported by the local node")

// RunInContainer is not supported.
func (p *Provider) RunInContainer(context.Context, string, string, string, []string, api.AttachIO) error {
	return errNotSupported
}

// AttachToContainer is not supported.
func (p *Provider) AttachToContainer(context.Context, string, string, string, api.AttachIO) error {
	return errNotSupported
}

// GetStatsSummary is not supported.
func (p *Provider) GetStatsSummary(context.Context) (*statsv1alpha1.Summary, error) {
	return nil, errNotSupported
}

// GetMetricsResource is not supported.
func (p *Provider) GetMetricsResource(context.Context) ([]*dto.MetricFamily, error) {
	return nil, errNotSupported
}
