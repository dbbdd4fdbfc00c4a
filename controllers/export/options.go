package export

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/events"
)

// Option changes how a Reconciler works.
type Option func(*Reconciler)

// WithClient sets the client the reconciler reads and writes through;
// SetupWithManager uses the manager's unless set.
func WithClient(c client.Client) Option { return func(r *Reconciler) { r.client, r.apiReader = c, c } }

// WithAPIReader sets where Secrets and ConfigMaps are read, uncached (the
// controller may get them, not list or watch them); default the client of
// WithClient, or the manager's API reader. Give it after WithClient.
func WithAPIReader(rd client.Reader) Option { return func(r *Reconciler) { r.apiReader = rd } }

// WithClock sets the clock of conditions, TTLs and certificates.
func WithClock(c clock.PassiveClock) Option { return func(r *Reconciler) { r.clock = c } }

// WithEventRecorder sets where events go; SetupWithManager uses the
// manager's unless set.
func WithEventRecorder(rec events.Recorder) Option { return func(r *Reconciler) { r.recorder = rec } }

// WithImage sets the export server's image and pull policy (required).
func WithImage(image string, pull corev1.PullPolicy) Option {
	return func(r *Reconciler) { r.image, r.pullPolicy = image, pull }
}

// WithExternalHost has the exports' status list external links through an
// export proxy reached at host (host[:port]) whose certificate is
// certPEM; without it only internal links are listed, as KubeVirt does
// without an Ingress or Route.
func WithExternalHost(host string, certPEM []byte) Option {
	return func(r *Reconciler) { r.externalHost, r.externalCert = host, string(certPEM) }
}

// WithIngressDiscovery has the exports' status list external links
// through the host of an Ingress of namespace (the install namespace) that
// routes to the export proxy's Service, with the certificate of its TLS
// Secret, as KubeVirt does; WithExternalHost, when set, wins.
func WithIngressDiscovery(namespace string) Option {
	return func(r *Reconciler) { r.ingressNamespace = namespace }
}

// WithCertDuration sets how long a server certificate lasts (default 24
// hours, KubeVirt's); a server stops a fifth of it before its end and is
// made again with a new one. With WithKubeVirtCertParams it applies while
// there is no KubeVirt CR.
func WithCertDuration(d time.Duration) Option {
	return func(r *Reconciler) { r.fixedParams = CertParamsFor(d) }
}

// WithKubeVirtCertParams has the servers' certificates last and be
// renewed as the KubeVirt CR of namespace ("": clusterconfig's default)
// says in spec.certificateRotateStrategy.selfSigned.server, as KubeVirt's
// export controller does: a change of the CR replaces the running servers
// (event CertificateParametersChanged) with ones whose certificates
// follow it. The CR is read through the client's cache, and watched.
func WithKubeVirtCertParams(namespace string) Option {
	return func(r *Reconciler) { r.kubevirtParams, r.kubevirtNamespace = true, namespace }
}

// WithInUseRecheck sets how often an export paused by a claim in use
// looks again (default 3 seconds, KubeVirt's).
func WithInUseRecheck(d time.Duration) Option { return func(r *Reconciler) { r.recheck = d } }

// WithSpecOptionsFrom sets where the settings an exported VM's
// instancetype and preference are expanded with come from (default
// virt/spec's defaults).
func WithSpecOptionsFrom(src SpecOptionsSource) Option {
	return func(r *Reconciler) { r.specSource = src }
}
