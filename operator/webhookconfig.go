package operator

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/deploy"
)

// webhookTimeoutSeconds bounds each call, KubeVirt's.
const webhookTimeoutSeconds = 10

// webhookObjects are what makes the apiserver call the operator's
// [Webhook]: the Service in front of the operator's pods (none when
// Settings.WebhookURL says where the operator is) and the validating
// webhook configuration, trusting caBundle.
func webhookObjects(s Settings, caBundle []byte) []client.Object {
	var objs []client.Object
	if s.WebhookURL == "" {
		objs = append(objs, &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: WebhookService},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{virtv1.AppLabel: deploy.OperatorName},
				Ports: []corev1.ServicePort{{Name: WebhookPortName, Port: 443, Protocol: corev1.ProtocolTCP,
					TargetPort: intstr.FromString(WebhookPortName)}},
			}})
	}
	clientConfig := func(path string) admissionregistrationv1.WebhookClientConfig {
		c := admissionregistrationv1.WebhookClientConfig{CABundle: caBundle}
		if s.WebhookURL != "" {
			u := strings.TrimSuffix(s.WebhookURL, "/") + path
			c.URL = &u
			return c
		}
		port := int32(443)
		c.Service = &admissionregistrationv1.ServiceReference{Namespace: s.Namespace, Name: WebhookService, Path: &path, Port: &port}
		return c
	}
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	scope := admissionregistrationv1.NamespacedScope
	timeout := int32(webhookTimeoutSeconds)
	hook := func(name, path string, op admissionregistrationv1.OperationType) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{
			Name: name, ClientConfig: clientConfig(path), AdmissionReviewVersions: []string{"v1"},
			FailurePolicy: &fail, SideEffects: &none, TimeoutSeconds: &timeout,
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{op},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{virtv1.GroupVersion.Group}, APIVersions: []string{"*"},
					Resources: []string{"kubevirts"}, Scope: &scope}}},
		}
	}
	return append(objs, &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: WebhookConfigurationName, Labels: map[string]string{virtv1.AppLabel: WebhookConfigurationName}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			hook(DeleteWebhookName, DeleteValidatePath, admissionregistrationv1.Delete),
			hook(UpdateWebhookName, UpdateValidatePath, admissionregistrationv1.Update),
			hook(CreateWebhookName, CreateValidatePath, admissionregistrationv1.Create),
		},
	})
}

// webhookNames are the names the operator's serving certificate covers:
// its Service's, or the host of Settings.WebhookURL.
func webhookNames(s Settings) (dns []string, ips []net.IP) {
	if s.WebhookURL == "" {
		svc := WebhookService + "." + s.Namespace
		return []string{WebhookService, svc, svc + ".svc", svc + ".svc.cluster.local"}, nil
	}
	host := webhookHost(s.WebhookURL)
	if ip := net.ParseIP(host); ip != nil {
		return nil, []net.IP{ip}
	}
	return []string{host}, nil
}

// webhookHost is the host of a URL Settings.Check accepted.
func webhookHost(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Hostname()
}

// checkWebhookURL reports what makes u unusable as Settings.WebhookURL;
// the apiserver calls only https URLs without a query or fragment.
func checkWebhookURL(u string) error {
	p, err := url.Parse(u)
	switch {
	case err != nil:
		return fmt.Errorf("operator: Settings.WebhookURL %q: %w", u, err)
	case p.Scheme != "https" || p.Hostname() == "":
		return fmt.Errorf("operator: Settings.WebhookURL %q: want https://HOST[:PORT][/PATH]", u)
	case p.RawQuery != "" || p.Fragment != "" || p.User != nil:
		return fmt.Errorf("operator: Settings.WebhookURL %q: no user, query or fragment allowed", u)
	}
	return nil
}
