package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/internal/freeport"
	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
	"github.com/virtkit/virtkit/virtapi/subresources"
)

// Secrets of the daemons that run as pods of the real node.
const (
	virtAPISecret       = "virt-api-certs"
	virtAPIClientSecret = "virt-api-handler-client"
	// deploymentTimeout bounds the wait for virt-api's and
	// virt-controller's pods: their images are pulled from the local
	// registry first.
	deploymentTimeout = 3 * time.Minute
)

// deployDaemons runs virtkit's daemons as pods of the real node, from the
// built images, as a cluster operator runs them: virt-handler's DaemonSet,
// then virt-api's and virt-controller's Deployments (one replica each:
// they take the host's network, where two would share a port). It returns
// once virt-api serves the apiserver's calls and virt-controller is ready.
// The local nodes' handlers stay in this process.
func (c *Cluster) deployDaemons(ctx context.Context, cl client.Client) error {
	if err := c.deployHandler(ctx, cl); err != nil {
		return err
	}
	apiImg, err := c.pushBuilt(ctx, deploy.APIName)
	if err != nil {
		return err
	}
	ctrlImg, err := c.pushBuilt(ctx, deploy.ControllerName)
	if err != nil {
		return err
	}
	pki := c.cp.Config().PKI()
	if err := pki.EnsureClientCert(virtAPIClientCert, nodeapi.ClientName); err != nil {
		return err
	}
	serving, err := tlsSecret(virtAPISecret, pki.Cert(virtAPICert), pki.Key(virtAPICert), "")
	if err != nil {
		return err
	}
	handlerClient, err := tlsSecret(virtAPIClientSecret, pki.Cert(virtAPIClientCert), pki.Key(virtAPIClientCert), pki.CACert())
	if err != nil {
		return err
	}
	apiserver, err := c.apiServerHostPort()
	if err != nil {
		return err
	}
	ports, err := freeport.Range(2)
	if err != nil {
		return fmt.Errorf("cluster: virt-controller ports: %w", err)
	}
	onReal := deploy.Placement{NodeSelector: map[string]string{corev1.LabelHostname: c.real.Name()}}
	api, err := deploy.APIObjects(deploy.API{Namespace: Namespace, Image: apiImg, PullPolicy: corev1.PullAlways,
		TLSSecret: virtAPISecret, HandlerClientSecret: virtAPIClientSecret, Replicas: 1, Port: int32(c.cfg.VirtAPIPort),
		Placement: onReal, APIServer: apiserver})
	if err != nil {
		return err
	}
	controller, err := deploy.ControllerObjects(deploy.Controller{Namespace: Namespace, Image: ctrlImg, PullPolicy: corev1.PullAlways,
		// Emulation comes from the KubeVirt CR, which it reads live: only
		// the real node's handler turns KVM off whatever the CR says.
		LauncherImage: c.config.LauncherImage, LauncherCapabilitiesCache: c.base.LauncherCapabilitiesCache,
		Replicas: 1, MetricsPort: int32(ports), ProbePort: int32(ports + 1), Placement: onReal, APIServer: apiserver})
	if err != nil {
		return err
	}
	c.cfg.Logger.Info("starting virt-api and virt-controller on the real node", "node", c.real.Name(), "images", []string{apiImg, ctrlImg})
	objs := append(append([]client.Object{serving, handlerClient}, api...), controller...)
	if err := deploy.Apply(ctx, cl, objs...); err != nil {
		return err
	}
	for _, name := range []string{deploy.APIName, deploy.ControllerName} {
		if err := c.waitDeployment(ctx, cl, name); err != nil {
			return err
		}
	}
	return waitAPIService(ctx, cl)
}

// tlsSecret is a kubernetes.io/tls Secret of the files cert and key and,
// unless ca is empty, the CA file as ca.crt.
func tlsSecret(name, cert, key, ca string) (*corev1.Secret, error) {
	s := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name, Labels: map[string]string{deploy.Label: "virtkit"}},
		Type:       corev1.SecretTypeTLS, Data: map[string][]byte{}}
	files := map[string]string{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key}
	if ca != "" {
		files[corev1.ServiceAccountRootCAKey] = ca
	}
	for k, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("cluster: Secret %s: %w", name, err)
		}
		s.Data[k] = b
	}
	return s, nil
}

// apiServerHostPort is the apiserver's "host:port", where the pods of the
// real node reach it over the host's network.
func (c *Cluster) apiServerHostPort() (string, error) {
	u, err := url.Parse(c.rest.Host)
	if err != nil {
		return "", fmt.Errorf("cluster: apiserver address %q: %w", c.rest.Host, err)
	}
	return u.Host, nil
}

// waitDeployment waits until the Deployment name has all its replicas
// ready and up to date.
func (c *Cluster) waitDeployment(ctx context.Context, cl client.Client, name string) error {
	ctx, cancel := context.WithTimeout(ctx, deploymentTimeout)
	defer cancel()
	for {
		var d appsv1.Deployment
		err := cl.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: name}, &d)
		if err == nil && d.Spec.Replicas != nil && d.Status.ObservedGeneration == d.Generation &&
			d.Status.ReadyReplicas == *d.Spec.Replicas && d.Status.UpdatedReplicas == *d.Spec.Replicas {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: %s on node %s not ready within %s (%v): %s", name, c.real.Name(), deploymentTimeout, err,
				podStates(context.WithoutCancel(ctx), cl, name))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// waitAPIService waits until the apiserver reaches virt-api's subresource
// API (its APIService is Available), so that the first virtctl call of a
// fresh cluster does not meet a 503.
func waitAPIService(ctx context.Context, cl client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, deploymentTimeout)
	defer cancel()
	name := subresources.Version + "." + subresources.Group
	for {
		svc := &unstructured.Unstructured{}
		svc.SetAPIVersion("apiregistration.k8s.io/v1")
		svc.SetKind("APIService")
		err := cl.Get(ctx, client.ObjectKey{Name: name}, svc)
		available := ""
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(svc.Object, "status", "conditions")
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok && m["type"] == "Available" {
					available = fmt.Sprintf("%v: %v", m["status"], m["message"])
					if m["status"] == "True" {
						return nil
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: APIService %s not available within %s (%v): %s", name, deploymentTimeout, err, available)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// podStates describes the pods of the kubevirt.io label app, for an error.
func podStates(ctx context.Context, cl client.Client, app string) string {
	var pods corev1.PodList
	if err := cl.List(ctx, &pods, client.InNamespace(Namespace), client.MatchingLabels{virtv1.AppLabel: app}); err != nil {
		return err.Error()
	}
	if len(pods.Items) == 0 {
		return "no " + app + " pod"
	}
	var out string
	for _, p := range pods.Items {
		out += fmt.Sprintf("pod %s: %s %+v; ", p.Name, p.Status.Phase, p.Status.ContainerStatuses)
	}
	return out
}

// podsGone waits until no pod of the kubevirt.io label app is left, or ctx
// ends; it reports which.
func podsGone(ctx context.Context, cl client.Client, app string) bool {
	for {
		var pods corev1.PodList
		err := cl.List(ctx, &pods, client.InNamespace(Namespace), client.MatchingLabels{virtv1.AppLabel: app})
		if err == nil && len(pods.Items) == 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// removeDeployments deletes virt-operator's Deployment (if virtkit was
// installed with it), then virt-controller's, virt-api's and
// virt-exportproxy's, and waits,
// up to 90 s each time, until their pods are gone: first, so that no
// controller restarts what Down stops, and so that the real node's drain
// does not see them come back.
func (c *Cluster) removeDeployments(ctx context.Context) error {
	cl, err := client.New(c.rest, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	var errs []error
	for _, names := range [][]string{{deploy.OperatorName}, {deploy.ControllerName, deploy.APIName, deploy.ExportProxyName}} {
		for _, name := range names {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name}}
			if err := cl.Delete(ctx, d, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("cluster: deleting %s's Deployment: %w", name, err))
			}
		}
		wait, cancel := context.WithTimeout(ctx, 90*time.Second)
		for _, name := range names {
			if !podsGone(wait, cl, name) {
				errs = append(errs, fmt.Errorf("cluster: %s's pods not gone within 90 s: %s", name, podStates(ctx, cl, name)))
			}
		}
		cancel()
	}
	return errors.Join(errs...)
}
