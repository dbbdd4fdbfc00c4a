package nodeapi

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HandlerAddressAnnotation is the Node annotation where a node's handler
// publishes the base URL of its node API, e.g. "https://10.0.0.7:8186" (a
// bare "host:port" means https). The handler sets it when it starts serving,
// for people and tools. virt-api does not read it: a node's credentials can
// rewrite their Node, so virt-api finds handlers through PodLocator.
const HandlerAddressAnnotation = "virtkit.io/handler-address"

// Endpoint is where one node's handler serves the node API.
type Endpoint struct {
	// URL is the base URL (scheme, host and port, optionally a path prefix).
	URL *url.URL
	// TLS is the client TLS configuration for it: the CA that signed the
	// handler's certificate and virt-api's client certificate. Nil for
	// plain HTTP or the system roots.
	TLS *tls.Config
}

// Locator finds the handler of a node. Errors wrap ErrUnavailable when the
// node has no reachable handler.
type Locator interface {
	// Locate returns the endpoint of the handler on node.
	Locate(ctx context.Context, node string) (Endpoint, error)
}

// OpsOf returns, for each node, a Client of the endpoint l finds for its
// handler.
func OpsOf(l Locator, opts ...ClientOption) func(ctx context.Context, node string) (Ops, error) {
	return func(ctx context.Context, node string) (Ops, error) {
		ep, err := l.Locate(ctx, node)
		if err != nil {
			return nil, err
		}
		return NewClient(ep, opts...), nil
	}
}

// StaticLocator is a fixed table of node name to endpoint, for tests and for
// integrators that know their nodes.
type StaticLocator map[string]Endpoint

// Locate implements Locator.
func (l StaticLocator) Locate(_ context.Context, node string) (Endpoint, error) {
	ep, ok := l[node]
	if !ok {
		return Endpoint{}, fmt.Errorf("node %q: no handler endpoint known: %w", node, ErrUnavailable)
	}
	return ep, nil
}

// AnnotationLocator reads HandlerAddressAnnotation from the Node object.
// Any node's credentials can rewrite a Node's annotations, so it serves only
// setups where every node is trusted; PodLocator is the one to use otherwise.
type AnnotationLocator struct {
	reader client.Reader
	tls    *tls.Config
}

var _ Locator = (*AnnotationLocator)(nil)

// AnnotationLocatorOption changes an AnnotationLocator.
type AnnotationLocatorOption func(*AnnotationLocator)

// WithTLSConfig sets the client TLS configuration every endpoint gets.
func WithTLSConfig(c *tls.Config) AnnotationLocatorOption {
	return func(l *AnnotationLocator) { l.tls = c }
}

// NewAnnotationLocator returns a locator that reads Nodes through r (which
// needs get on nodes).
func NewAnnotationLocator(r client.Reader, opts ...AnnotationLocatorOption) *AnnotationLocator {
	l := &AnnotationLocator{reader: r}
	for _, o := range opts {
		o(l)
	}
	return l
}

// Locate implements Locator.
func (l *AnnotationLocator) Locate(ctx context.Context, node string) (Endpoint, error) {
	var n corev1.Node
	if err := l.reader.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
		if apierrors.IsNotFound(err) {
			return Endpoint{}, fmt.Errorf("node %q: %w: %w", node, ErrUnavailable, err)
		}
		return Endpoint{}, fmt.Errorf("node %q: reading its handler address: %w", node, err)
	}
	addr := n.Annotations[HandlerAddressAnnotation]
	if addr == "" {
		return Endpoint{}, fmt.Errorf("node %q: annotation %s is not set (is the handler running there?): %w",
			node, HandlerAddressAnnotation, ErrUnavailable)
	}
	u, err := ParseAddress(addr)
	if err != nil {
		return Endpoint{}, fmt.Errorf("node %q: annotation %s: %w", node, HandlerAddressAnnotation, err)
	}
	return Endpoint{URL: u, TLS: l.tls}, nil
}

// ParseAddress parses a handler address: a URL with scheme http or https, or
// a bare host:port (https).
func ParseAddress(addr string) (*url.URL, error) {
	if !strings.Contains(addr, "://") {
		addr = "https://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return nil, fmt.Errorf("handler address %q: %w", addr, err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("handler address %q: want https://HOST:PORT or HOST:PORT", addr)
	}
	return u, nil
}
