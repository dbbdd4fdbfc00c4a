package operator

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/virtkit/virtkit/deploy"
	vkadmission "github.com/virtkit/virtkit/virtapi/admission"
)

// The operator's own admission webhooks, KubeVirt's virt-operator-validator:
// its configuration, the webhooks' names and paths, and the Service in
// front of the operator's pods that the apiserver calls.
const (
	WebhookConfigurationName = "virt-operator-validator"
	CreateWebhookName        = "kubevirt-create-validator.kubevirt.io"
	UpdateWebhookName        = "kubevirt-update-validator.kubevirt.io"
	DeleteWebhookName        = "kubevirt-validator.kubevirt.io"
	CreateValidatePath       = "/kubevirt-validate-create"
	UpdateValidatePath       = "/kubevirt-validate-update"
	DeleteValidatePath       = "/kubevirt-validate-delete"
	WebhookService           = "kubevirt-operator-webhook"
	// WebhookPortName names the operator container's webhook port, which
	// the Service targets.
	WebhookPortName = deploy.OperatorWebhookPortName
)

// MessageAlreadyCreated is KubeVirt's refusal of a second KubeVirt CR.
const MessageAlreadyCreated = "Kubevirt is already created"

// Webhook answers the apiserver's admission calls on KubeVirt CRs, as
// KubeVirt's operator does:
//   - creating a KubeVirt CR is refused while any other exists (the
//     configuration exists only once the first CR is installed, so the
//     first is never refused);
//   - changing a KubeVirt CR's spec is refused, with KubeVirt's 422 and
//     one cause per field, when the new spec fails [Validate]; a change of
//     metadata alone (labels, finalizers) or of a CR being deleted passes,
//     so that a CR created invalid can still be uninstalled;
//   - deleting a Deployed CR whose uninstallStrategy is
//     BlockUninstallIfWorkloadsExist is refused while VMIs, VMs or VMI
//     replica sets exist, with KubeVirt's message naming which.
//
// It has no side effect: whoever reaches its port learns only what the
// answer says. Every replica serves it, not only the leader.
type Webhook struct {
	reader client.Reader
}

// NewWebhook returns the webhook, reading the cluster through r: an
// uncached reader (the manager's API reader), as the operator's cache
// holds only what it made.
func NewWebhook(r client.Reader) *Webhook { return &Webhook{reader: r} }

// Handlers are the webhook's http.Handlers by path.
func (w *Webhook) Handlers() map[string]http.Handler {
	return map[string]http.Handler{
		CreateValidatePath: &admission.Webhook{Handler: admission.HandlerFunc(w.admitCreate)},
		UpdateValidatePath: &admission.Webhook{Handler: admission.HandlerFunc(admitUpdate)},
		DeleteValidatePath: &admission.Webhook{Handler: admission.HandlerFunc(w.admitDelete)},
	}
}

func (w *Webhook) admitCreate(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	list := &virtv1.KubeVirtList{}
	if err := w.reader.List(ctx, list, client.Limit(1)); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("listing KubeVirt CRs: %w", err))
	}
	if len(list.Items) > 0 {
		return refused(MessageAlreadyCreated)
	}
	return admission.Allowed("")
}

func admitUpdate(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	var kv, old virtv1.KubeVirt
	if err := json.Unmarshal(req.Object.Raw, &kv); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the KubeVirt CR: %w", err))
	}
	if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the KubeVirt CR's old version: %w", err))
	}
	if kv.DeletionTimestamp != nil || equality.Semantic.DeepEqual(kv.Spec, old.Spec) {
		return admission.Allowed("")
	}
	return vkadmission.Verdict(virtv1.GroupVersion.WithKind("KubeVirt").GroupKind(), kv.Name, Validate(&kv))
}

func (w *Webhook) admitDelete(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Delete {
		return admission.Allowed("")
	}
	kv := &virtv1.KubeVirt{}
	if req.Name == "" {
		// A collection delete: KubeVirt judges it by the first CR.
		list := &virtv1.KubeVirtList{}
		if err := w.reader.List(ctx, list, client.InNamespace(req.Namespace), client.Limit(1)); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("listing KubeVirt CRs: %w", err))
		}
		if len(list.Items) == 0 {
			return admission.Allowed("")
		}
		kv = &list.Items[0]
	} else if err := w.reader.Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: req.Name}, kv); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("KubeVirt %s/%s: %w", req.Namespace, req.Name, err))
	}
	if kv.Spec.UninstallStrategy != virtv1.KubeVirtUninstallStrategyBlockUninstallIfWorkloadsExist ||
		kv.Status.Phase != virtv1.KubeVirtPhaseDeployed {
		return admission.Allowed("")
	}
	what, err := blockingWorkload(ctx, w.reader)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if what != "" {
		return refused(blockedError{what}.Error())
	}
	return admission.Allowed("")
}

// refused is a refusal with msg, as KubeVirt's webhooks answer (code 400).
func refused(msg string) admission.Response {
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
		Result: &metav1.Status{Code: http.StatusBadRequest, Message: msg}}}
}

// ServingCertificate returns a tls.Config.GetCertificate for the
// operator's webhook server: the certificate in SecretOperator of
// namespace, read through r at each handshake (a cached client, so a
// rotated certificate is served as soon as the cache has it) and parsed
// again only when the Secret changed. Until the first reconcile has made
// it, handshakes fail.
func ServingCertificate(r client.Reader, namespace string) func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	var mu sync.Mutex
	var version string
	var cert *tls.Certificate
	return func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		s := &corev1.Secret{}
		if err := r.Get(hello.Context(), client.ObjectKey{Namespace: namespace, Name: SecretOperator}, s); err != nil {
			return nil, fmt.Errorf("operator: webhook certificate: secret %s/%s: %w", namespace, SecretOperator, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if cert != nil && s.ResourceVersion == version {
			return cert, nil
		}
		c, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
		if err != nil {
			return nil, fmt.Errorf("operator: webhook certificate: secret %s/%s: %w", namespace, SecretOperator, err)
		}
		cert, version = &c, s.ResourceVersion
		return cert, nil
	}
}

// AddWebhook serves the [Webhook] from every replica of mgr (leader or
// not) with the options given, over TLS with [ServingCertificate] read
// through mgr's cache (set up with [CacheOptions]).
func AddWebhook(mgr ctrl.Manager, namespace string, opts webhook.Options) error {
	get := ServingCertificate(mgr.GetClient(), namespace)
	opts.TLSOpts = append(opts.TLSOpts, func(c *tls.Config) { c.GetCertificate = get })
	srv := webhook.NewServer(opts)
	for path, h := range NewWebhook(mgr.GetAPIReader()).Handlers() {
		srv.Register(path, h)
	}
	if err := mgr.Add(srv); err != nil {
		return fmt.Errorf("operator: webhook server: %w", err)
	}
	return nil
}
