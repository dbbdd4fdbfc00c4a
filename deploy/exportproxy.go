package deploy

import (
	"errors"
	"path"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	virtv1 "kubevirt.io/api/core/v1"
	exportv1 "kubevirt.io/api/export/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virt/storage/export"
)

// ExportProxy says how the export proxy runs on a cluster: a Deployment
// behind the Service virt-exportproxy, as KubeVirt's virt-exportproxy,
// forwarding the external links of VirtualMachineExports to their
// servers.
type ExportProxy struct {
	// Namespace holds the Deployment, its Service and ServiceAccount
	// (required).
	Namespace string
	// Image is virt-exportproxy's image (required).
	Image string
	// PullPolicy is the image's pull policy; empty is Kubernetes' default.
	PullPolicy corev1.PullPolicy
	// TLSSecret names a kubernetes.io/tls Secret in Namespace: its
	// serving certificate, for the Service's name (required).
	TLSSecret string
	// ExportCASecret names the Secret in Namespace whose tls.crt is the
	// export CA, which export servers' certificates are checked against;
	// only that key is mounted (required).
	ExportCASecret string
	// Replicas is the Deployment's size; default 2.
	Replicas int32
	// Port is the port it serves on; default 8443.
	Port int32
	// Placement limits the nodes it runs on; empty is every Linux node.
	Placement Placement
	// APIServer, "host:port", is where it reaches the apiserver on a
	// cluster whose pods cannot reach the kubernetes Service; it then takes
	// the host's network, as Controller.APIServer.
	APIServer string
}

// ExportProxyName names the export proxy's Deployment, Service,
// ClusterRole and binding, and is the kubevirt.io label of its pods.
const ExportProxyName = export.ProxyServiceName

// ExportProxyServiceAccount is the export proxy's ServiceAccount.
const ExportProxyServiceAccount = "kubevirt-exportproxy"

// Where the export proxy's pod finds its certificate and the export CA.
const (
	exportProxyCertDir = "/etc/virt-exportproxy/certs"
	exportProxyCADir   = "/etc/virt-exportproxy/export-ca"
)

func (e ExportProxy) workload() workload {
	return workload{kind: "ExportProxy", namespace: e.Namespace, image: e.Image, name: ExportProxyName, sa: ExportProxyServiceAccount,
		placement: e.Placement, apiServer: e.APIServer}
}

func (e ExportProxy) withDefaults() (ExportProxy, error) {
	errs := e.workload().check()
	if e.TLSSecret == "" {
		errs = append(errs, errors.New("deploy: ExportProxy.TLSSecret: required (it serves HTTPS only)"))
	}
	if e.ExportCASecret == "" {
		errs = append(errs, errors.New("deploy: ExportProxy.ExportCASecret: required (export servers are checked against it)"))
	}
	errs = append(errs, checkReplicas("ExportProxy", &e.Replicas)...)
	errs = append(errs, checkPorts("ExportProxy", port{"Port", &e.Port, 8443})...)
	return e, joinErrs(errs)
}

// ExportProxyObjects returns the export proxy's objects: its
// ServiceAccount, ClusterRole and binding, the Service virt-exportproxy
// (port 443), the Deployment and, with two replicas or more, a
// PodDisruptionBudget.
func ExportProxyObjects(e ExportProxy) ([]client.Object, error) {
	e, err := e.withDefaults()
	if err != nil {
		return nil, err
	}
	w := e.workload()
	svc := &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: w.meta(true),
		Spec: corev1.ServiceSpec{Selector: map[string]string{virtv1.AppLabel: ExportProxyName},
			Ports: []corev1.ServicePort{{Name: "export-proxy", Port: 443, TargetPort: intstr.FromInt32(e.Port), Protocol: corev1.ProtocolTCP}}}}
	objs := append(w.identity(exportProxyRules()), svc, w.deployment(e.Replicas, exportProxyPod(e)))
	if pdb := w.disruptionBudget(e.Replicas); pdb != nil {
		objs = append(objs, pdb)
	}
	return objs, nil
}

// exportProxyRules: an export is read to find its server pod, which is
// read for its address and readiness; nothing is written.
func exportProxyRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{exportv1.SchemeGroupVersion.Group}, Resources: []string{"virtualmachineexports"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}},
	}
}

func exportProxyPod(e ExportProxy) corev1.PodSpec {
	args := []string{
		"--listen=" + listen(e.Port),
		"--tls-cert-file=" + path.Join(exportProxyCertDir, corev1.TLSCertKey),
		"--tls-private-key-file=" + path.Join(exportProxyCertDir, corev1.TLSPrivateKeyKey),
		"--export-ca-file=" + path.Join(exportProxyCADir, corev1.TLSCertKey),
	}
	return e.workload().servingPod(e.PullPolicy, args, e.Port, "50Mi", []secretMount{
		{name: "certs", dir: exportProxyCertDir, secret: e.TLSSecret},
		// The CA's certificate only: its key is virt-controller's.
		{name: "export-ca", dir: exportProxyCADir, secret: e.ExportCASecret, items: []corev1.KeyToPath{{Key: corev1.TLSCertKey, Path: corev1.TLSCertKey}}},
	})
}
