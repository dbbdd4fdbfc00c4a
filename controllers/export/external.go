package export

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	exportv1 "kubevirt.io/api/export/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/virtkit/virtkit/virt/storage/export"
)

// IngressCertRefresh is how long the certificate read from an Ingress's
// TLS Secret is used before it is read again (the Ingress changing reads
// it at once).
const IngressCertRefresh = 10 * time.Minute

// external is where exports' external links point: the host given
// (WithExternalHost), else the host of an Ingress of the install
// namespace that routes to the export proxy's Service (WithIngressDiscovery),
// as KubeVirt finds it; "" when there is none: internal links only.
type external struct {
	mu sync.Mutex
	// ingress, resourceVersion and read say which Ingress host and cert
	// were read from, and when.
	ingress         types.UID
	resourceVersion string
	read            time.Time
	host, cert      string
}

// externalLink returns the host and certificate of exports' external
// links now.
func (r *Reconciler) externalLink(ctx context.Context, now time.Time) (string, string, error) {
	if r.externalHost != "" || r.ingressNamespace == "" {
		return r.externalHost, r.externalCert, nil
	}
	var l networkingv1.IngressList
	if err := r.client.List(ctx, &l, client.InNamespace(r.ingressNamespace)); err != nil {
		return "", "", fmt.Errorf("listing the Ingresses of %s: %w", r.ingressNamespace, err)
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	for i := range l.Items {
		ing := &l.Items[i]
		host := export.IngressHost(ing, export.ProxyServiceName)
		if host == "" {
			continue
		}
		e := &r.ext
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.ingress == ing.UID && e.resourceVersion == ing.ResourceVersion && now.Sub(e.read) < IngressCertRefresh {
			return e.host, e.cert, nil
		}
		cert, err := r.ingressCert(ctx, ing, host, now)
		if err != nil {
			return "", "", err
		}
		e.ingress, e.resourceVersion, e.read, e.host, e.cert = ing.UID, ing.ResourceVersion, now, host, cert
		return host, cert, nil
	}
	return "", "", nil
}

// ingressCert is the certificate of host in the first TLS Secret of ing,
// read uncached; "" when it names none or it is gone.
func (r *Reconciler) ingressCert(ctx context.Context, ing *networkingv1.Ingress, host string, now time.Time) (string, error) {
	for _, tls := range ing.Spec.TLS {
		if tls.SecretName == "" {
			continue
		}
		sec := &corev1.Secret{}
		switch err := r.apiReader.Get(ctx, client.ObjectKey{Namespace: ing.Namespace, Name: tls.SecretName}, sec); {
		case apierrors.IsNotFound(err):
			return "", nil
		case err != nil:
			return "", fmt.Errorf("reading the TLS Secret %s/%s of Ingress %s: %w", ing.Namespace, tls.SecretName, ing.Name, err)
		}
		return export.HostCert(host, sec.Data[corev1.TLSCertKey], now), nil
	}
	return "", nil
}

// allExports maps an Ingress of the install namespace to every export:
// their external links may change with it.
func (r *Reconciler) allExports(ctx context.Context, obj client.Object) []reconcile.Request {
	if obj.GetNamespace() != r.ingressNamespace {
		return nil
	}
	return r.everyExport(ctx)
}

// everyExport is a request for each export of the cluster.
func (r *Reconciler) everyExport(ctx context.Context) []reconcile.Request {
	list := &exportv1.VirtualMachineExportList{}
	if err := r.client.List(ctx, list); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, e := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&e)})
	}
	return reqs
}
