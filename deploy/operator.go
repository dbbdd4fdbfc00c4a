package deploy

import (
	"fmt"
	"strconv"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/deploy/certs"
)

// Operator says how virt-operator runs: the release manifest a cluster
// operator applies before creating the KubeVirt CR, as KubeVirt's
// kubevirt-operator.yaml.
type Operator struct {
	// Namespace is created, and holds the operator, the KubeVirt CR and
	// everything the operator installs (required).
	Namespace string
	// Image is virt-operator's image (required). The daemons' images are
	// its siblings: same registry and tag unless the KubeVirt CR says
	// otherwise.
	Image string
	// PullPolicy is the image's pull policy; empty is Kubernetes' default.
	PullPolicy corev1.PullPolicy
	// Replicas is the Deployment's size; default 2, whose replicas elect a
	// leader.
	Replicas int32
	// ProbePort is where it serves /healthz and /readyz; default 8445.
	ProbePort int32
	// WebhookPort is where it serves its admission webhooks over TLS,
	// the port named "webhooks" that its webhook Service targets; default
	// 8444, KubeVirt's.
	WebhookPort int32
	// Placement limits the nodes it runs on; empty is every Linux node.
	Placement Placement
	// APIServer, "host:port", is where the operator and the daemons it
	// installs reach the apiserver on a cluster whose pods cannot reach the
	// kubernetes Service; they then take the host's network.
	APIServer string
	// LauncherCapabilitiesCache, KubeletPodsDir and HandlerStateDir are
	// node folders the operator passes on to the daemons
	// (operator.Settings); empty: none, and the defaults.
	LauncherCapabilitiesCache, KubeletPodsDir, HandlerStateDir string
	// Emulation passes --emulation: the nodes never use KVM, whatever the
	// CR says (operator.Settings.Emulation).
	Emulation bool
}

// The operator's names: its Deployment, ClusterRole and pod label, and
// its ServiceAccount, KubeVirt's.
const (
	OperatorName           = "virt-operator"
	OperatorServiceAccount = "kubevirt-operator"
)

func (o Operator) workload() workload {
	return workload{kind: "Operator", namespace: o.Namespace, image: o.Image, name: OperatorName, sa: OperatorServiceAccount,
		placement: o.Placement, apiServer: o.APIServer}
}

// OperatorObjects returns the release manifest's objects, in the order to
// apply them: the Namespace, the KubeVirt CRD (which uninstalling keeps),
// the operator's ServiceAccount, ClusterRole and binding, and its
// Deployment.
//
// The ClusterRole is broad: the operator creates the daemons' roles, and
// Kubernetes lets only a holder of a permission grant it (or one with the
// escalate and bind verbs, which it has for roles).
func OperatorObjects(o Operator) ([]client.Object, error) {
	errs := o.workload().check()
	errs = append(errs, checkReplicas("Operator", &o.Replicas)...)
	errs = append(errs, checkPorts("Operator", port{"ProbePort", &o.ProbePort, 8445}, port{"WebhookPort", &o.WebhookPort, 8444})...)
	if err := joinErrs(errs); err != nil {
		return nil, err
	}
	crds, err := CRDs()
	if err != nil {
		return nil, err
	}
	var kvCRD client.Object
	for _, c := range crds {
		if c.Name == "kubevirts.kubevirt.io" {
			kvCRD = c
		}
	}
	if kvCRD == nil {
		return nil, fmt.Errorf("deploy: the KubeVirt CRD is not among the embedded CRDs")
	}
	w := o.workload()
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Namespace, Labels: map[string]string{Label: "virtkit"}}}
	return append(append([]client.Object{ns, kvCRD}, w.identity(operatorRules())...), w.deployment(o.Replicas, operatorPod(o))), nil
}

// operatorRules is what the operator does with the API: it installs CRDs,
// workloads, webhooks, the APIService, Services, identities and Secrets,
// grants the daemons their roles, reads the KubeVirt CR and writes its
// status, elects a leader, lists workloads that block an uninstall,
// takes the handlers' labels off nodes, and approves and signs the
// handlers' requests for their node's migration certificate (signer
// certs.NodeSigner only).
func operatorRules() []rbacv1.PolicyRule {
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{certv1.GroupName}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{certv1.GroupName}, Resources: []string{"certificatesigningrequests/approval", "certificatesigningrequests/status"}, Verbs: []string{"update"}},
		{APIGroups: []string{certv1.GroupName}, Resources: []string{"signers"}, ResourceNames: []string{certs.NodeSigner}, Verbs: []string{"approve", "sign"}},
		{APIGroups: []string{"kubevirt.io"}, Resources: []string{"kubevirts", "kubevirts/status", "kubevirts/finalizers"}, Verbs: all},
		{APIGroups: []string{"kubevirt.io"}, Resources: []string{"virtualmachines", "virtualmachineinstances", "virtualmachineinstancereplicasets"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: all},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "daemonsets"}, Verbs: all},
		{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: all},
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations",
			"validatingadmissionpolicies", "validatingadmissionpolicybindings"}, Verbs: all},
		{APIGroups: []string{"apiregistration.k8s.io"}, Resources: []string{"apiservices"}, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"services", "serviceaccounts", "secrets", "configmaps"}, Verbs: all},
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles", "clusterrolebindings", "roles", "rolebindings"},
			Verbs: append(all, "escalate", "bind")},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
}

// OperatorWebhookPortName names the operator container's webhook port.
const OperatorWebhookPortName = "webhooks"

// OperatorImageEnv is the variable that tells virt-operator its own image,
// from which it takes the daemons' registry and tag.
const OperatorImageEnv = "OPERATOR_IMAGE"

func operatorPod(o Operator) corev1.PodSpec {
	args := []string{"--namespace=" + o.Namespace, "--health-probe-bind-address=" + listen(o.ProbePort),
		"--webhook-port=" + strconv.Itoa(int(o.WebhookPort))}
	for _, f := range []struct{ flag, v string }{{"apiserver", o.APIServer}, {"launcher-capabilities-cache", o.LauncherCapabilitiesCache},
		{"kubelet-pods-dir", o.KubeletPodsDir}, {"handler-state-dir", o.HandlerStateDir}} {
		if f.v != "" {
			args = append(args, "--"+f.flag+"="+f.v)
		}
	}
	if o.Emulation {
		args = append(args, "--emulation")
	}
	return o.workload().managerPod(o.PullPolicy, args, o.ProbePort, []corev1.EnvVar{{Name: OperatorImageEnv, Value: o.Image}},
		corev1.ContainerPort{Name: OperatorWebhookPortName, ContainerPort: o.WebhookPort, Protocol: corev1.ProtocolTCP})
}
