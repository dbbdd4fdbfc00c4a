package virtapi

import (
	"context"
	"crypto"
	"crypto/tls"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/spec"
	"github.com/virtkit/virtkit/virt/storage/upload"
	"github.com/virtkit/virtkit/virtapi/admission"
	"github.com/virtkit/virtkit/virtapi/eviction"
	"github.com/virtkit/virtkit/virtapi/subresources"
	"github.com/virtkit/virtkit/virtapi/uploadapi"
)

// Config is what virt-api needs besides a client.
type Config struct {
	// SpecOptions are the cluster's defaulting and validation settings
	// (controllers.Config.SpecOptions, from the KubeVirt CR).
	SpecOptions []spec.Option
	// SpecOptionsFrom, when set, replaces SpecOptions with the settings of
	// each request's moment, so that a change of the KubeVirt CR reaches
	// the webhooks without a restart.
	SpecOptionsFrom admission.SpecOptions
	// PrivilegedUsers may change a VMI's spec after creation (the handler
	// and controller service accounts).
	PrivilegedUsers []string
	// Subresources are the options of the subresources API: its
	// authenticator, and how it reaches nodes (WithLocator or WithNodeOps).
	Subresources []subresources.Option
	// KubeVirtNamespace holds the KubeVirt CR, whose evictionStrategy the
	// pod eviction webhook applies to VMIs that set none; "" is "kubevirt".
	KubeVirtNamespace string
	// APIServer tells the apiserver's webhook calls from anyone's (the
	// subresources API's frontproxy.Authenticator, when the apiserver
	// presents its front-proxy client certificate to webhooks). Only such
	// calls may mark a VMI for evacuation; nil trusts none.
	APIServer eviction.Caller
	// Upload, when set, serves DataVolume uploads: the
	// upload.cdi.kubevirt.io API and the upload proxy at upload.ProxyPaths.
	Upload *Upload
}

// Upload is what virt-api needs to serve uploads.
type Upload struct {
	// Authenticator tells who asks for an upload token (the aggregator's
	// front proxy, as for the subresources API).
	Authenticator subresources.Authenticator
	// Key signs upload tokens and, by its public half, checks them: the
	// serving key, shared by every virt-api replica.
	Key func() (crypto.Signer, error)
	// ClientTLS presents the proxy's client certificate to upload pods.
	ClientTLS func() (*tls.Config, error)
}

// Handler returns virt-api: the webhooks at admission.MutatePath and
// admission.ValidatePath, the pod eviction webhook at
// eviction.WebhookPath, everything else to the subresources API.
func Handler(cl client.Client, scheme *runtime.Scheme, cfg Config) http.Handler {
	mux := http.NewServeMux()
	specOpts := cfg.SpecOptionsFrom
	if specOpts == nil {
		specOpts = admission.Static(cfg.SpecOptions...)
	}
	for path, h := range admission.HandlersFrom(scheme, specOpts, admission.WithPrivilegedUsers(cfg.PrivilegedUsers...), admission.WithInstancetypes(cl),
		admission.WithCloneAuthorization(cl), admission.WithSnapshots(cl)) {
		mux.Handle(path, h)
	}
	var evictionOpts []eviction.Option
	if cfg.APIServer != nil {
		evictionOpts = append(evictionOpts, eviction.WithCaller(cfg.APIServer))
	}
	mux.Handle(eviction.WebhookPath, eviction.NewWebhook(cl, cfg.KubeVirtNamespace, evictionOpts...).Handler())
	drainTaint := func(ctx context.Context, node string) (string, error) {
		return eviction.DrainTaint(ctx, cl, cfg.KubeVirtNamespace, node)
	}
	if u := cfg.Upload; u != nil {
		tokens := uploadapi.NewTokenServer(u.Key, u.Authenticator, &subresources.SubjectAccessReviewer{Client: cl})
		mux.Handle("/apis/"+uploadapi.Group, tokens)
		mux.Handle("/apis/"+uploadapi.Group+"/", tokens)
		pub := func() (crypto.PublicKey, error) {
			k, err := u.Key()
			if err != nil {
				return nil, err
			}
			return k.Public(), nil
		}
		proxy := upload.NewProxy(pub, uploadapi.ClaimBackends{Reader: cl, TLS: u.ClientTLS})
		for _, path := range upload.ProxyPaths {
			mux.Handle(path, proxy)
		}
	}
	mux.Handle("/", subresources.New(cl, append([]subresources.Option{subresources.WithDrainTaint(drainTaint),
		subresources.WithExpander(expander{r: cl, opts: specOpts})}, cfg.Subresources...)...))
	return mux
}

// TLSConfig is the serving TLS of virt-api with cert: client certificates
// are requested, not required, because the aggregator presents its
// front-proxy certificate (checked by frontproxy.Authenticator) and webhook
// calls come with it only where the apiserver's admission configuration
// says so.
func TLSConfig(cert tls.Certificate) *tls.Config {
	return TLSConfigFrom(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil })
}

// TLSConfigFrom is TLSConfig with the certificate of each handshake taken
// from get, so that a renewed certificate serves new connections
// (deploy/certs/certfiles).
func TLSConfigFrom(get func(*tls.ClientHelloInfo) (*tls.Certificate, error)) *tls.Config {
	return &tls.Config{GetCertificate: get, ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12}
}
