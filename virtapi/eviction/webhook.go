package eviction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/virtkit/virtkit/virt/clusterconfig"
	"github.com/virtkit/virtkit/virt/migrate"
	virtadmission "github.com/virtkit/virtkit/virtapi/admission"
)

// WebhookPath is where virt-api serves the pod eviction webhook.
const WebhookPath = "/pod-eviction"

// WebhookConfigurationName names the webhook's configuration.
const WebhookConfigurationName = "virtkit-pod-eviction"

// Webhook is the validating webhook on pods/eviction: it refuses evicting
// the launcher pod of a VMI whose eviction strategy migrates it (or leaves
// it to an external controller) and records the drain in the VMI's
// status.evacuationNodeName; every other eviction passes.
//
// Anyone who reaches virt-api's port can post an admission review, so the
// review is not trusted: the pod is read from the API, and the side effect
// (a migration of someone's VMI) is performed only for a call the
// apiserver made, known by its client certificate (WithCaller). Any other
// call is answered, and changes nothing.
type Webhook struct {
	client    client.Client
	namespace string
	caller    Caller
}

var _ admission.Handler = (*Webhook)(nil)

// Caller tells whether an HTTP request came from the apiserver
// (frontproxy.Authenticator does, by the aggregator's client certificate).
type Caller interface {
	VerifyCaller(r *http.Request) error
}

// Option changes a Webhook.
type Option func(*Webhook)

// WithCaller sets how the webhook knows the apiserver's calls. Without it
// no call is trusted, and no VMI is marked for evacuation.
func WithCaller(c Caller) Option { return func(w *Webhook) { w.caller = c } }

// NewWebhook returns the webhook; cl reads pods, VMIs and the KubeVirt CR
// (in kubevirtNamespace; "" is clusterconfig.DefaultNamespace) and writes
// VMI status.
func NewWebhook(cl client.Client, kubevirtNamespace string, opts ...Option) *Webhook {
	w := &Webhook{client: cl, namespace: clusterconfig.Namespace(kubevirtNamespace)}
	for _, o := range opts {
		o(w)
	}
	return w
}

// callerKey keys a callerVerdict in a request's context.
type callerKey struct{}

// callerVerdict is why a call is not known to come from the apiserver,
// or nil when it is.
type callerVerdict struct{ err error }

// FromAPIServer marks ctx as a call the apiserver made, for a program
// that calls Handle in process, not over the network; Handler marks only
// the calls its Caller verifies.
func FromAPIServer(ctx context.Context) context.Context {
	return context.WithValue(ctx, callerKey{}, callerVerdict{})
}

// untrusted says why the call of ctx is not known to be the apiserver's,
// or returns nil.
func untrusted(ctx context.Context) error {
	v, ok := ctx.Value(callerKey{}).(callerVerdict)
	if !ok {
		return errors.New("the call was not verified")
	}
	return v.err
}

// Handler is the webhook as an http.Handler for WebhookPath.
func (w *Webhook) Handler() http.Handler {
	return &admission.Webhook{Handler: w, WithContextFunc: func(ctx context.Context, r *http.Request) context.Context {
		v := callerVerdict{err: errors.New("virt-api has no way to verify the apiserver's calls")}
		if w.caller != nil {
			v.err = w.caller.VerifyCaller(r)
		}
		return context.WithValue(ctx, callerKey{}, v)
	}}
}

// Handle answers one eviction.
func (w *Webhook) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Resource.Resource != "pods" || req.SubResource != "eviction" {
		return admission.Allowed("")
	}
	pod := &corev1.Pod{}
	err := w.client.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: req.Name}, pod)
	if apierrors.IsNotFound(err) {
		return admission.Allowed("")
	}
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("pod %s/%s: %w", req.Namespace, req.Name, err))
	}
	vmiName, uid := pod.Labels[virtv1.DeprecatedVirtualMachineNameLabel], pod.Labels[virtv1.CreatedByLabel]
	if pod.Labels[virtv1.AppLabel] != "virt-launcher" || vmiName == "" || uid == "" {
		return admission.Allowed("")
	}
	vmi := &virtv1.VirtualMachineInstance{}
	switch err := w.client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: vmiName}, vmi); {
	case apierrors.IsNotFound(err):
		vmi = nil
	case err != nil:
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("VirtualMachineInstance %s/%s: %w", pod.Namespace, vmiName, err))
	case string(vmi.UID) != uid:
		vmi = nil // the pod of an earlier VMI of that name
	}
	var strategy virtv1.EvictionStrategy
	if vmi != nil {
		kv, err := clusterconfig.Get(ctx, w.client, w.namespace)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		strategy = migrate.EvictionStrategy(vmi, migrate.ClusterEvictionStrategy(kv))
	}
	ended := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	d := migrate.DecideEviction(vmi, pod.Spec.NodeName, ended, strategy)
	if d.Allow {
		return admission.Allowed("")
	}
	dry := req.DryRun != nil && *req.DryRun
	var ev policyv1.Eviction
	if json.Unmarshal(req.Object.Raw, &ev) == nil && ev.DeleteOptions != nil && len(ev.DeleteOptions.DryRun) > 0 {
		dry = true // kubectl drain --dry-run=server asks in the eviction's delete options
	}
	if d.Evacuate && !dry && vmi.Status.EvacuationNodeName != pod.Spec.NodeName {
		if err := untrusted(ctx); err != nil {
			logf.FromContext(ctx).Info("eviction of a launcher pod refused without evacuating its VMI: the call is not known to come from the apiserver",
				"pod", pod.Namespace+"/"+pod.Name, "vmi", vmi.Name, "reason", err.Error())
			return tooManyRequests(fmt.Sprintf("%s; but virt-api starts the migration only on a call from the apiserver, and this call is not known to be one (%v): "+
				"the apiserver must present its front-proxy client certificate to virt-api's webhooks", d.Message, err))
		}
		upd := vmi.DeepCopy()
		upd.Status.EvacuationNodeName = pod.Spec.NodeName
		if err := w.client.Status().Patch(ctx, upd, client.MergeFromWithOptions(vmi, client.MergeFromWithOptimisticLock{})); err != nil {
			return admission.Errored(http.StatusInternalServerError, fmt.Errorf("VirtualMachineInstance %s/%s: status.evacuationNodeName: %w", vmi.Namespace, vmi.Name, err))
		}
	}
	return tooManyRequests(d.Message)
}

// tooManyRequests refuses with 429, as a PodDisruptionBudget refuses:
// drain tools retry.
func tooManyRequests(msg string) admission.Response {
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusTooManyRequests, Reason: metav1.StatusReasonTooManyRequests, Message: msg}}}
}

// LauncherPodsOnly is the webhook's match condition: the apiserver calls
// virt-api only for evictions of pods named as launcher pods are, so that
// evicting any other pod in the cluster neither waits for virt-api nor
// fails without it. (An eviction carries the pod's name, not its labels;
// the webhook reads the pod and checks its labels itself.)
const LauncherPodsOnly = "request.name.startsWith('virt-launcher-')"

// Configuration is the webhook's configuration for virt-api behind svc:
// pods/eviction creations of launcher pods (LauncherPodsOnly), failing
// closed (without virt-api, a launcher pod is not evicted from under its
// guest), 10 s. Its side effect (the VMI's evacuationNodeName) is skipped
// for dry runs.
func Configuration(svc virtadmission.Service) *admissionregistrationv1.ValidatingWebhookConfiguration {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNoneOnDryRun
	timeout := int32(10)
	path := WebhookPath
	port := svc.Port
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: WebhookConfigurationName, Labels: map[string]string{"app.kubernetes.io/part-of": "virtkit"}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "pod-eviction.kubevirt.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service:  &admissionregistrationv1.ServiceReference{Namespace: svc.Namespace, Name: svc.Name, Path: &path, Port: &port},
				CABundle: svc.CABundle,
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/eviction"}},
			}},
			MatchConditions:         []admissionregistrationv1.MatchCondition{{Name: "launcher-pods-only", Expression: LauncherPodsOnly}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}
