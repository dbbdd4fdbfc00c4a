package admission

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clonev1 "kubevirt.io/api/clone/v1beta1"
	virtv1 "kubevirt.io/api/core/v1"
	poolv1 "kubevirt.io/api/pool/v1beta1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
)

// Names of the webhook configurations and of each webhook in them.
const (
	MutatingConfigurationName   = "virtkit-mutating"
	ValidatingConfigurationName = "virtkit-validating"
	mutateWebhookName           = "mutate.virtualmachines.kubevirt.io"
	validateWebhookName         = "validate.virtualmachines.kubevirt.io"
)

// Service locates virt-api for the apiserver.
type Service struct {
	Namespace, Name string
	Port            int32
	// CABundle is the PEM certificate authority that signed virt-api's
	// serving certificate.
	CABundle []byte
}

// Configurations returns the webhook configurations for virt-api behind svc.
// They match VirtualMachines, VirtualMachineInstances and
// VirtualMachineClones (and the validating one also replica sets, pools,
// DataVolumes, VM snapshots and restores) on CREATE
// and UPDATE only: deleting never calls virt-api, so an unavailable virt-api cannot
// block a delete. The failure policy is Fail: without virt-api nothing is
// stored unvalidated. Each webhook gets 10 s, below the apiserver's 30 s, so
// a slow virt-api fails a request with a clear message instead of a timeout.
func Configurations(svc Service) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	timeout := int32(10)
	equivalent := admissionregistrationv1.Equivalent
	reinvoke := admissionregistrationv1.IfNeededReinvocationPolicy
	rule := func(gv schema.GroupVersion, resources ...string) admissionregistrationv1.RuleWithOperations {
		return admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{gv.Group},
				APIVersions: []string{gv.Version},
				Resources:   resources,
			},
		}
	}
	// A pool written as v1alpha1 reaches the webhook as v1beta1, the
	// equivalent version the rule names (matchPolicy Equivalent).
	core := virtv1.SchemeGroupVersion
	client := func(path string) admissionregistrationv1.WebhookClientConfig {
		p := path
		port := svc.Port
		return admissionregistrationv1.WebhookClientConfig{
			Service:  &admissionregistrationv1.ServiceReference{Namespace: svc.Namespace, Name: svc.Name, Path: &p, Port: &port},
			CABundle: svc.CABundle,
		}
	}
	labels := map[string]string{"app.kubernetes.io/part-of": "virtkit"}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: MutatingConfigurationName, Labels: labels},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    mutateWebhookName,
			ClientConfig:            client(MutatePath),
			Rules:                   []admissionregistrationv1.RuleWithOperations{rule(core, "virtualmachines", "virtualmachineinstances"), rule(clonev1.SchemeGroupVersion, "virtualmachineclones")},
			FailurePolicy:           &fail,
			MatchPolicy:             &equivalent,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy:      &reinvoke,
		}},
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: ValidatingConfigurationName, Labels: labels},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         validateWebhookName,
			ClientConfig: client(ValidatePath),
			Rules: []admissionregistrationv1.RuleWithOperations{
				rule(core, "virtualmachines", "virtualmachineinstances", "virtualmachineinstancereplicasets"),
				rule(poolv1.SchemeGroupVersion, "virtualmachinepools"),
				rule(cdiv1.SchemeGroupVersion, "datavolumes"),
				rule(vmsnapshotv1.SchemeGroupVersion, "virtualmachinesnapshots", "virtualmachinerestores"),
				rule(clonev1.SchemeGroupVersion, "virtualmachineclones")},
			FailurePolicy:           &fail,
			MatchPolicy:             &equivalent,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	return mutating, validating
}
