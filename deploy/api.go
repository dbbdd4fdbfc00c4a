package deploy

import (
	"errors"
	"path"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	virtv1 "kubevirt.io/api/core/v1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virtapi/nodeapi"
)

// API says how virt-api runs on a cluster: a Deployment behind the Service
// that [VirtAPIObjects] registers with the apiserver, as KubeVirt's virt-api.
type API struct {
	// Namespace holds the Deployment, its ServiceAccount and Secrets, and
	// the KubeVirt CR virt-api reads (required).
	Namespace string
	// Image is virt-api's image (required).
	Image string
	// PullPolicy is the image's pull policy; empty is Kubernetes' default.
	PullPolicy corev1.PullPolicy
	// Service is the name of virt-api's Service (VirtAPI.Service); default
	// virt-api.
	Service string
	// TLSSecret names a kubernetes.io/tls Secret in Namespace with the
	// serving certificate (tls.crt, tls.key), which must name
	// SERVICE.NAMESPACE.svc: the apiserver checks that name when it calls the
	// webhooks and the subresource API (required).
	TLSSecret string
	// HandlerClientSecret names a Secret in Namespace with virt-api's client
	// certificate towards the nodes' handlers (tls.crt, tls.key) and the CA
	// of their serving certificates (ca.crt) (required: the node API speaks
	// mutual TLS only).
	HandlerClientSecret string
	// HandlerServerName is the name virt-api expects in every handler's
	// serving certificate, whatever address it dials (a pod IP is not known
	// when the certificate is issued). Default nodeapi.ServerName(Namespace).
	HandlerServerName string
	// Replicas is the Deployment's size; default 2, one standing by, with a
	// PodDisruptionBudget that keeps one running.
	Replicas int32
	// Port is the TLS port virt-api listens on, the Service's target port;
	// default 8443.
	Port int32
	// MetricsPort is where virt-api serves /metrics over plain HTTP, the
	// metrics Service's endpoint (MetricsObjects); default 8190.
	MetricsPort int32
	// Placement limits the nodes virt-api runs on; empty is every Linux
	// node.
	Placement Placement
	// APIServer, "host:port", is where virt-api reaches the apiserver on a
	// cluster whose pods cannot reach the kubernetes Service; virt-api then
	// takes the host's network, as Handler.APIServer.
	APIServer string
}

// APIName names virt-api's Deployment, ClusterRole and binding, and is
// the kubevirt.io label of its pods, which its Service selects.
const APIName = "virt-api"

// Paths inside virt-api's pod.
const (
	apiCertDir    = "/etc/virt-api/certs"
	apiHandlerDir = "/etc/virt-api/handler-client"
)

func (a API) workload() workload {
	return workload{kind: "API", namespace: a.Namespace, image: a.Image, name: APIName, sa: APIServiceAccount,
		placement: a.Placement, apiServer: a.APIServer}
}

func (a API) withDefaults() (API, error) {
	errs := a.workload().check()
	if a.TLSSecret == "" {
		errs = append(errs, errors.New("deploy: API.TLSSecret: required (the apiserver calls virt-api over TLS)"))
	}
	if a.HandlerClientSecret == "" {
		errs = append(errs, errors.New("deploy: API.HandlerClientSecret: required (the node API speaks mutual TLS only)"))
	}
	if a.Service == "" {
		a.Service = APIName
	}
	if a.HandlerServerName == "" {
		a.HandlerServerName = nodeapi.ServerName(a.Namespace)
	}
	errs = append(errs, checkReplicas("API", &a.Replicas)...)
	errs = append(errs, checkPorts("API", port{"Port", &a.Port, 8443}, port{"MetricsPort", &a.MetricsPort, 8190})...)
	return a, joinErrs(errs)
}

// APIObjects returns virt-api's ServiceAccount, its ClusterRole and
// binding, a RoleBinding that lets it read the apiserver's front-proxy
// settings (kube-system's extension-apiserver-authentication-reader), its
// Deployment and, with more than one replica, a PodDisruptionBudget. The
// Secrets are the caller's: they hold keys. [VirtAPIObjects] makes the
// apiserver call it.
//
// The pod runs as a non-root user without capabilities on a read-only
// root file system.
func APIObjects(a API) ([]client.Object, error) {
	a, err := a.withDefaults()
	if err != nil {
		return nil, err
	}
	w := a.workload()
	reader := w.roleBinding(metav1.NamespaceSystem, APIName+"-authentication-reader", "extension-apiserver-authentication-reader")
	objs := append(w.identity(apiRules()), reader, w.deployment(a.Replicas, apiPod(a)))
	if pdb := w.disruptionBudget(a.Replicas); pdb != nil {
		objs = append(objs, pdb)
	}
	return objs, nil
}

// apiRules is what virt-api does with the API: the subresource verbs
// (start, stop, restart, migrate, add and remove volume, pause through the
// node) read and patch VMs and VMIs, create migrations and delete launcher
// pods, each call authorized by a SubjectAccessReview; the eviction
// webhook marks VMIs for evacuation, and evacuatecancel clears the mark
// unless the node has the drain taint; the node handlers are found by
// their pods; VMs' instancetypes and preferences are read for admission
// and expand-spec.
func apiRules() []rbacv1.PolicyRule {
	kv := virtv1.SchemeGroupVersion.Group
	return []rbacv1.PolicyRule{
		{APIGroups: []string{kv}, Resources: []string{"virtualmachines", "virtualmachineinstances"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{kv}, Resources: []string{"virtualmachines/status", "virtualmachineinstances/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{kv}, Resources: []string{"virtualmachineinstancemigrations"}, Verbs: []string{"get", "list", "watch", "create"}},
		{APIGroups: []string{kv}, Resources: []string{"kubevirts"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
		// The validating webhook checks a VM's template against them, and
		// expand-spec writes them into it: a started VM's copies are kept
		// in ControllerRevisions.
		readInstancetypes(),
		{APIGroups: []string{"apps"}, Resources: []string{"controllerrevisions"}, Verbs: []string{"get"}},
		// The mutating webhook reads the labels of the claim a VM infers
		// its instancetype and preference from; the upload proxy reads a
		// claim's, and its upload pod's, readiness.
		{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get"}},
		// addvolume checks that the DataVolume it hotplugs exists.
		{APIGroups: []string{cdiv1.SchemeGroupVersion.Group}, Resources: []string{"datavolumes"}, Verbs: []string{"get"}},
		// The validating webhook finds the claim a clone's DataSource
		// names, to ask RBAC whether the user may clone from its namespace.
		{APIGroups: []string{cdiv1.SchemeGroupVersion.Group}, Resources: []string{"datasources"}, Verbs: []string{"get"}},
		// The snapshot a VM restore names, checked at admission.
		{APIGroups: []string{vmsnapshotv1.SchemeGroupVersion.Group}, Resources: []string{"virtualmachinesnapshots"}, Verbs: []string{"get"}},
	}
}

// apiPod is virt-api's pod.
func apiPod(a API) corev1.PodSpec {
	args := []string{
		"--listen=" + listen(a.Port),
		"--metrics-bind-address=" + listen(a.MetricsPort),
		"--namespace=" + a.Namespace,
		"--service-name=" + a.Service,
		"--tls-cert-file=" + path.Join(apiCertDir, corev1.TLSCertKey),
		"--tls-private-key-file=" + path.Join(apiCertDir, corev1.TLSPrivateKeyKey),
		"--handler-ca-file=" + path.Join(apiHandlerDir, corev1.ServiceAccountRootCAKey),
		"--handler-client-cert-file=" + path.Join(apiHandlerDir, corev1.TLSCertKey),
		"--handler-client-key-file=" + path.Join(apiHandlerDir, corev1.TLSPrivateKeyKey),
	}
	args = append(args, "--handler-server-name="+a.HandlerServerName)
	return a.workload().servingPod(a.PullPolicy, args, a.Port, "100Mi", []secretMount{
		{name: "certs", dir: apiCertDir, secret: a.TLSSecret},
		{name: "handler-client", dir: apiHandlerDir, secret: a.HandlerClientSecret},
	}, metricsPort(a.MetricsPort))
}

// deployment is the workload's Deployment of spec, replicas pods large,
// replaced one pod at a time.
func (w workload) deployment(replicas int32, spec corev1.PodSpec) *appsv1.Deployment {
	d := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: w.meta(true),
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{virtv1.AppLabel: w.name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: w.podLabels()}, Spec: w.podSpec(spec)},
		}}
	if w.apiServer != "" {
		// On the host's network a new pod cannot start beside the one it
		// replaces (they share the ports): a rollout stops one first.
		zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &zero, MaxUnavailable: &one}}
	}
	return d
}

// disruptionBudget keeps one of the workload's pods running through a
// drain; none for a single replica, which a budget would make undrainable.
func (w workload) disruptionBudget(replicas int32) *policyv1.PodDisruptionBudget {
	if replicas < 2 {
		return nil
	}
	one := intstr.FromInt32(1)
	return &policyv1.PodDisruptionBudget{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: w.meta(true),
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{virtv1.AppLabel: w.name}}}}
}

// spread prefers nodes that run no other pod of name, so that a standby
// survives the loss of one node.
func spread(name string) *corev1.Affinity {
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1,
			PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{virtv1.AppLabel: name}}}}}}}
}

// nonRootPod and nonRootContainer are the security contexts of the daemons
// that need nothing of the node: the image's non-root user, no
// capabilities, no privilege escalation, a read-only root file system and
// the runtime's default seccomp profile.
func nonRootPod() *corev1.PodSecurityContext {
	yes := true
	return &corev1.PodSecurityContext{RunAsNonRoot: &yes,
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
}

func nonRootContainer() *corev1.SecurityContext {
	yes, no := true, false
	return &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
}
