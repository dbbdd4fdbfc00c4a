package virtapi_test

import (
	"crypto/tls"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers"
	"github.com/virtkit/virtkit/virtapi"
	"github.com/virtkit/virtkit/virtapi/frontproxy"
	"github.com/virtkit/virtkit/virtapi/subresources"
)

// Serve virt-api in your own process: webhooks and the subresources API on
// one TLS port, defaulting with the cluster's KubeVirt CR settings.
func ExampleHandler() {
	var (
		cl    client.Client             // a client for the cluster
		cfg   controllers.Config        // controllers.ReadConfig(ctx, cl, "kubevirt", ...)
		front *frontproxy.Authenticator // subresources.FrontProxyFromCluster(ctx, cl)
		cert  tls.Certificate           // names virt-api.kubevirt.svc
	)
	s := runtime.NewScheme()
	if err := virtv1.AddToScheme(s); err != nil {
		panic(err)
	}
	h := virtapi.Handler(cl, s, virtapi.Config{
		SpecOptions:  cfg.SpecOptions(),
		Subresources: []subresources.Option{subresources.WithAuthenticator(front)},
	})
	srv := &http.Server{Addr: ":8443", Handler: h, TLSConfig: virtapi.TLSConfig(cert)}
	_ = srv // srv.ListenAndServeTLS("", "")
}
