package nodeapi

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HandlerAppLabel is the kubevirt.io label value of the handlers' pods.
const HandlerAppLabel = "virt-handler"

// PodLocator finds a node's handler by its pod: the Running and Ready pod
// labelled kubevirt.io=virt-handler in virtkit's namespace whose
// spec.nodeName is the node, at its pod address and the port named
// PortName. What it trusts is written by the scheduler and by that node's
// kubelet about its own pod, in a namespace only cluster admins write;
// unlike a Node annotation, which every node's credentials could rewrite
// for a node of their choosing.
type PodLocator struct {
	reader    client.Reader
	namespace string
	tls       *tls.Config
}

var _ Locator = (*PodLocator)(nil)

// NewPodLocator returns a locator that lists the pods of namespace through
// r (which needs list on pods there); every endpoint gets tlsConfig.
func NewPodLocator(r client.Reader, namespace string, tlsConfig *tls.Config) *PodLocator {
	return &PodLocator{reader: r, namespace: namespace, tls: tlsConfig}
}

// Locate implements Locator.
func (l *PodLocator) Locate(ctx context.Context, node string) (Endpoint, error) {
	var pods corev1.PodList
	if err := l.reader.List(ctx, &pods, client.InNamespace(l.namespace),
		client.MatchingLabels{virtv1.AppLabel: HandlerAppLabel}); err != nil {
		return Endpoint{}, fmt.Errorf("node %q: listing the handler pods of namespace %s: %w", node, l.namespace, err)
	}
	seen := ""
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != node {
			continue
		}
		port, why := handlerPort(p)
		if why == "" {
			u := &url.URL{Scheme: "https", Host: net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(port)))}
			return Endpoint{URL: u, TLS: l.tls}, nil
		}
		seen = fmt.Sprintf(" (pod %s: %s)", p.Name, why)
	}
	return Endpoint{}, fmt.Errorf("node %q: no ready handler pod in namespace %s%s: %w", node, l.namespace, seen, ErrUnavailable)
}

// handlerPort returns the node API's port of a handler pod that serves it,
// or why it does not.
func handlerPort(p *corev1.Pod) (int32, string) {
	switch {
	case p.DeletionTimestamp != nil:
		return 0, "being deleted"
	case p.Status.Phase != corev1.PodRunning:
		return 0, "phase " + string(p.Status.Phase)
	case !podReady(p):
		return 0, "not ready"
	case net.ParseIP(p.Status.PodIP) == nil:
		return 0, "no pod address"
	}
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.Name == PortName && port.ContainerPort > 0 {
				return port.ContainerPort, ""
			}
		}
	}
	return 0, "no port named " + PortName
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
