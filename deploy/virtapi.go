package deploy

import (
	"encoding/base64"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virtapi/admission"
	"github.com/virtkit/virtkit/virtapi/eviction"
	"github.com/virtkit/virtkit/virtapi/subresources"
	"github.com/virtkit/virtkit/virtapi/uploadapi"
)

// VirtAPI says where the apiserver finds virt-api.
type VirtAPI struct {
	// Namespace and Service name virt-api's Service (required).
	Namespace, Service string
	// Port is the Service's port the APIService and webhooks call (required).
	Port int32
	// TargetPort is the port virt-api listens on; 0 means Port.
	TargetPort int32
	// ExternalName, when set, makes the Service an ExternalName Service
	// pointing at this host: a virt-api outside the cluster's pod network,
	// as in virt-local ("localhost").
	ExternalName string
	// CABundle is the PEM CA of virt-api's serving certificate (required).
	CABundle []byte
}

// Label marks every object deploy makes.
const Label = "app.kubernetes.io/part-of"

// VirtAPIObjects returns what makes the apiserver call virt-api: its
// Namespace, its Service, the v1.subresources.kubevirt.io and
// v1beta1.upload.cdi.kubevirt.io APIServices, the mutating and validating
// webhook configurations, the pod eviction webhook's (virtapi/eviction),
// the subresource ClusterRoles with their binding, CDI's user
// ClusterRoles (virtapi/uploadapi), and KubeVirt's user ClusterRoles
// (UserRoles).
func VirtAPIObjects(o VirtAPI) ([]client.Object, error) {
	switch {
	case o.Namespace == "" || o.Service == "":
		return nil, fmt.Errorf("deploy: VirtAPI.Namespace and VirtAPI.Service: required")
	case o.Port <= 0:
		return nil, fmt.Errorf("deploy: VirtAPI.Port %d: must be positive", o.Port)
	case len(o.CABundle) == 0:
		return nil, fmt.Errorf("deploy: VirtAPI.CABundle: required")
	}
	target := o.TargetPort
	if target == 0 {
		target = o.Port
	}
	labels := map[string]string{Label: "virtkit"}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Service, Labels: labels},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"kubevirt.io": "virt-api"},
			Ports:    []corev1.ServicePort{{Name: "https", Port: o.Port, TargetPort: intstr.FromInt32(target)}},
		},
	}
	if o.ExternalName != "" {
		svc.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: o.ExternalName,
			Ports: []corev1.ServicePort{{Name: "https", Port: o.Port}}}
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": subresources.Version + "." + subresources.Group, "labels": map[string]any{Label: "virtkit"}},
		"spec": map[string]any{
			"group": subresources.Group, "version": subresources.Version,
			"service":              map[string]any{"namespace": o.Namespace, "name": o.Service, "port": int64(o.Port)},
			"caBundle":             base64.StdEncoding.EncodeToString(o.CABundle),
			"groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
		},
	}}
	uploadAPIService := apiService.DeepCopy()
	uploadAPIService.Object["metadata"] = map[string]any{"name": uploadapi.Version + "." + uploadapi.Group, "labels": map[string]any{Label: "virtkit"}}
	spec := uploadAPIService.Object["spec"].(map[string]any)
	spec["group"], spec["version"] = uploadapi.Group, uploadapi.Version
	webhookSvc := admission.Service{Namespace: o.Namespace, Name: o.Service, Port: o.Port, CABundle: o.CABundle}
	mutating, validating := admission.Configurations(webhookSvc)
	roles, binding := subresources.RBAC()
	objs := []client.Object{
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: o.Namespace}},
		svc, apiService, uploadAPIService, mutating, validating, eviction.Configuration(webhookSvc), binding,
	}
	cdiRoles, cdiBinding := uploadapi.RBAC()
	objs = append(objs, cdiBinding)
	for _, r := range append(append(roles, cdiRoles...), UserRoles()...) {
		objs = append(objs, r)
	}
	return objs, nil
}
