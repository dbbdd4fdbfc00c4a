package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vmictrl "github.com/virtkit/virtkit/controllers/vmi"
	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/internal/freeport"
	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
)

// The real node's handler: its serving certificate and the Secret that
// carries it, and virt-api's client certificate towards it, all from the
// cluster's CA.
const (
	handlerCert       = "virt-handler"
	handlerSecret     = "virt-handler-certs"
	virtAPIClientCert = "virt-api-client"
	// handlerReadyTimeout bounds the wait for the handler pod: its image
	// is pulled from the local registry, then it registers its device
	// plugins and beats once.
	handlerReadyTimeout = 3 * time.Minute
)

// deployHandler runs virt-handler on the real node as KubeVirt runs it: a
// DaemonSet pod from the built image, privileged, in the host's PID
// namespace, with the node API behind TLS. Launcher pods then run from the
// built launcher image (the local nodes ignore images). It returns once
// the pod is Ready and the node is schedulable for launchers.
func (c *Cluster) deployHandler(ctx context.Context, cl client.Client) error {
	img, err := c.pushBuilt(ctx, "virt-handler")
	if err != nil {
		return err
	}
	if c.config.LauncherImage, err = c.pushBuilt(ctx, "virt-launcher"); err != nil {
		return err
	}
	pki := c.cp.Config().PKI()
	if err := pki.EnsureServingCert(handlerCert, c.real.IP(), nodeapi.ServerName(Namespace)); err != nil {
		return err
	}
	secret, err := tlsSecret(handlerSecret, pki.Cert(handlerCert), pki.Key(handlerCert), pki.CACert())
	if err != nil {
		return err
	}
	port, err := freeport.Range(3)
	if err != nil {
		return fmt.Errorf("cluster: handler ports: %w", err)
	}
	apiserver, err := c.apiServerHostPort()
	if err != nil {
		return err
	}
	objs, err := deploy.HandlerObjects(deploy.Handler{
		Namespace: Namespace, Image: img, PullPolicy: corev1.PullAlways, TLSSecret: handlerSecret,
		Placement: deploy.Placement{NodeSelector: map[string]string{corev1.LabelHostname: c.real.Name()}},
		Emulation: c.config.Emulation,
		// The node labeller's probe runs from the launcher image.
		LauncherImage: c.config.LauncherImage,
		// Its records stay in the data directory, as the local nodes'
		// handlers' do, not in the host's /var/run.
		StateDir:    filepath.Join(c.cfg.DataDir, "handlers", c.real.Name()),
		PodsDir:     c.real.PodsDir(),
		NodeAPIPort: int32(port), ProbePort: int32(port + 1), MetricsPort: int32(port + 2),
		APIServer: apiserver,
	})
	if err != nil {
		return err
	}
	c.cfg.Logger.Info("starting virt-handler on the real node", "node", c.real.Name(), "image", img, "launcher", c.config.LauncherImage)
	if err := deploy.Apply(ctx, cl, append([]client.Object{secret}, objs...)...); err != nil {
		return err
	}
	return c.waitHandler(ctx, cl)
}

// waitHandler waits for the handler pod to be Ready and the real node to
// carry kubevirt.io/schedulable=true.
func (c *Cluster) waitHandler(ctx context.Context, cl client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, handlerReadyTimeout)
	defer cancel()
	for {
		var ds appsv1.DaemonSet
		var node corev1.Node
		err := errors.Join(cl.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: deploy.HandlerName}, &ds),
			cl.Get(ctx, client.ObjectKey{Name: c.real.Name()}, &node))
		if err == nil && ds.Status.DesiredNumberScheduled > 0 && ds.Status.NumberReady == ds.Status.DesiredNumberScheduled &&
			node.Labels[virtv1.NodeSchedulable] == "true" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: virt-handler on node %s not ready within %s (%v): %s", c.real.Name(), handlerReadyTimeout, err, podStates(context.WithoutCancel(ctx), cl, deploy.HandlerName))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// stopHandler ends the real node's guests while its handler still runs
// (their launcher pods are deleted: each guest shuts down within its grace
// period and the handler records how it ended), then removes the handler,
// so that the node's drain does not see a DaemonSet put it back.
func (c *Cluster) stopHandler(ctx context.Context) error {
	cl, err := client.New(c.rest, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	errs := []error{c.deleteLaunchers(ctx, cl), c.waitSettled(ctx, c.real.Name())}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: deploy.HandlerName}}
	if err := cl.Delete(ctx, ds); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("cluster: deleting virt-handler's DaemonSet: %w", err))
	}
	return errors.Join(errs...)
}

// deleteLaunchers deletes the real node's launcher pods and waits, up to
// 90 s, until they are gone.
func (c *Cluster) deleteLaunchers(ctx context.Context, cl client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for {
		var pods corev1.PodList
		if err := cl.List(ctx, &pods, client.MatchingLabels{virtv1.AppLabel: vmictrl.LauncherLabelValue},
			client.MatchingFields{"spec.nodeName": c.real.Name()}); err != nil {
			return fmt.Errorf("cluster: listing the real node's launcher pods: %w", err)
		}
		if len(pods.Items) == 0 {
			return nil
		}
		for i := range pods.Items {
			if p := &pods.Items[i]; p.DeletionTimestamp == nil {
				if err := cl.Delete(ctx, p); err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("cluster: deleting launcher pod %s/%s: %w", p.Namespace, p.Name, err)
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: %d launcher pods of the real node not gone within 90 s", len(pods.Items))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// nodeOps reaches the local nodes' handlers through their node API, as
// virt-api does on a cluster: with virt-api's client certificate, checking
// the handler's for nodeapi.ServerName against the cluster's CA, at the
// address each local node's handler listens on (known in this process;
// virt-api on a cluster finds it by the handler's pod).
func (c *Cluster) nodeOps() (func(ctx context.Context, node string) (nodeapi.Ops, error), error) {
	pki := c.cp.Config().PKI()
	if err := pki.EnsureClientCert(virtAPIClientCert, nodeapi.ClientName); err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(pki.Cert(virtAPIClientCert), pki.Key(virtAPIClientCert))
	if err != nil {
		return nil, fmt.Errorf("cluster: virt-api client certificate: %w", err)
	}
	ca, err := os.ReadFile(pki.CACert())
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("cluster: %s: no certificate", pki.CACert())
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots, ServerName: nodeapi.ServerName(Namespace), MinVersion: tls.VersionTLS12}
	locator := nodeapi.StaticLocator{}
	for _, n := range c.nodes {
		locator[n.name] = nodeapi.Endpoint{URL: n.apiURL, TLS: tc}
	}
	return nodeapi.OpsOf(locator), nil
}
