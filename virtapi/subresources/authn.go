package subresources

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virtapi/frontproxy"
)

// Authenticator tells who sent a request.
type Authenticator interface {
	// Authenticate returns the request's user, or an error saying why it
	// cannot be trusted.
	Authenticate(r *http.Request) (frontproxy.User, error)
}

var _ Authenticator = (*frontproxy.Authenticator)(nil)

// FrontProxyFromCluster reads the front-proxy settings the apiserver
// publishes in kube-system/extension-apiserver-authentication, as
// k8s.io/apiserver's delegated authentication does.
func FrontProxyFromCluster(ctx context.Context, r client.Reader) (*frontproxy.Authenticator, error) {
	var cm corev1.ConfigMap
	key := client.ObjectKey{Namespace: frontproxy.ConfigMapNamespace, Name: frontproxy.ConfigMapName}
	if err := r.Get(ctx, key, &cm); err != nil {
		return nil, fmt.Errorf("reading ConfigMap %s: %w", key, err)
	}
	a, err := frontproxy.FromConfigMap(cm.Data)
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s: %w", key, err)
	}
	return a, nil
}
