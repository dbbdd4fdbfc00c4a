package export

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/virt/clusterconfig"
)

// AnnCertParams records, on a server pod and its certificate's Secret,
// the certificate parameters they were made with (KubeVirt's annotation).
// A pod made with other parameters than the current ones is replaced, and
// its certificate issued again, as KubeVirt's export controller does.
const AnnCertParams = "kubevirt.io/export.certParameters"

// EventCertParamsChanged is the reason of the event of a server pod
// replaced because the certificate parameters changed.
const EventCertParamsChanged = "CertificateParametersChanged"

// CertParams are how long a server certificate lasts and how long before
// its end its server stops, to be made again with a new one. KubeVirt
// takes them from the KubeVirt CR's
// spec.certificateRotateStrategy.selfSigned.server (WithKubeVirtCertParams).
type CertParams struct {
	Duration    time.Duration
	RenewBefore time.Duration
}

// CertParamsFor are the parameters of certificates that last d: renewed
// when a fifth of their life is left, as KubeVirt's default.
func CertParamsFor(d time.Duration) CertParams {
	return CertParams{Duration: d, RenewBefore: certs.RenewBefore(d)}
}

// annotation is p as AnnCertParams holds it: KubeVirt's JSON, each
// duration in nanoseconds.
func (p CertParams) annotation() string {
	b, err := json.Marshal(p)
	if err != nil {
		panic(err) // two integers always encode
	}
	return string(b)
}

// certParams are the parameters a server made now gets: the KubeVirt CR's
// (read through the cache) with WithKubeVirtCertParams and a CR, else the
// fixed ones.
func (r *Reconciler) certParams(ctx context.Context) (CertParams, error) {
	if !r.kubevirtParams {
		return r.fixedParams, nil
	}
	kv, err := clusterconfig.Get(ctx, r.client, r.kubevirtNamespace)
	if err != nil {
		return CertParams{}, fmt.Errorf("export certificate parameters: %w", err)
	}
	if kv == nil {
		return r.fixedParams, nil
	}
	rot := clusterconfig.RotationOf(kv)
	return CertParams{Duration: rot.CertDuration, RenewBefore: rot.CertRenewBefore}, nil
}

// kubevirtExports maps the KubeVirt CR of the install namespace to every
// export: their servers' certificate parameters may change with it.
func (r *Reconciler) kubevirtExports(ctx context.Context, obj client.Object) []reconcile.Request {
	if obj.GetNamespace() != clusterconfig.Namespace(r.kubevirtNamespace) {
		return nil
	}
	return r.everyExport(ctx)
}
