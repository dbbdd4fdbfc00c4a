package deploy

import (
	"errors"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The ServiceAccounts of the daemons, KubeVirt's names: virt-api counts
// them as the users that may change a VMI's spec after creation
// ([PrivilegedUsers]).
const (
	APIServiceAccount        = "kubevirt-apiserver"
	ControllerServiceAccount = "kubevirt-controller"
	HandlerServiceAccount    = "kubevirt-handler"
)

// PrivilegedUsers are the user names of the daemons' ServiceAccounts in
// namespace, as the apiserver names them to virt-api's webhooks.
func PrivilegedUsers(namespace string) []string {
	var out []string
	for _, sa := range []string{HandlerServiceAccount, ControllerServiceAccount, APIServiceAccount} {
		out = append(out, "system:serviceaccount:"+namespace+":"+sa)
	}
	return out
}

// workload is what the daemons' objects have in common: where they run,
// from which image, and how they reach the apiserver.
type workload struct {
	kind, namespace, image string
	// name is the workload's name and its pods' kubevirt.io label; sa its
	// ServiceAccount.
	name, sa  string
	placement Placement
	apiServer string
}

// check reports the workload's missing or malformed common fields, each
// named as kind.Field.
func (w workload) check() []error {
	var errs []error
	if w.namespace == "" {
		errs = append(errs, fmt.Errorf("deploy: %s.Namespace: required", w.kind))
	}
	if w.image == "" {
		errs = append(errs, fmt.Errorf("deploy: %s.Image: required", w.kind))
	}
	if w.apiServer != "" {
		if _, port, err := net.SplitHostPort(w.apiServer); err != nil || port == "" {
			errs = append(errs, fmt.Errorf("deploy: %s.APIServer %q: want host:port", w.kind, w.apiServer))
		}
	}
	return errs
}

// port is one listening port of a workload, defaulted and checked.
type port struct {
	field string
	value *int32
	def   int32
}

// checkPorts sets each zero port to its default and reports those that are
// no port, named as kind.Field.
func checkPorts(kind string, ports ...port) []error {
	var errs []error
	for _, p := range ports {
		switch {
		case *p.value == 0:
			*p.value = p.def
		case *p.value < 0 || *p.value > 65535:
			errs = append(errs, fmt.Errorf("deploy: %s.%s %d: not a port", kind, p.field, *p.value))
		}
	}
	return errs
}

// checkReplicas defaults replicas to 2 (one standing by, as KubeVirt runs
// virt-api and virt-controller) and refuses a negative count.
func checkReplicas(kind string, replicas *int32) []error {
	switch {
	case *replicas == 0:
		*replicas = 2
	case *replicas < 0:
		return []error{fmt.Errorf("deploy: %s.Replicas %d: must be positive", kind, *replicas)}
	}
	return nil
}

func (w workload) labels() map[string]string {
	return map[string]string{Label: "virtkit", virtv1.AppLabel: w.name}
}

// podLabels are the labels of the workload's pods: its own, and the one the
// metrics Service selects (MetricsObjects).
func (w workload) podLabels() map[string]string {
	l := w.labels()
	l[PrometheusLabel] = "true"
	return l
}

func (w workload) meta(namespaced bool) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: w.name, Labels: w.labels()}
	if namespaced {
		m.Namespace = w.namespace
	}
	return m
}

// identity is the workload's ServiceAccount, a ClusterRole of rules named
// after the workload, and the binding of one to the other.
func (w workload) identity(rules []rbacv1.PolicyRule) []client.Object {
	sa := &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Namespace: w.namespace, Name: w.sa, Labels: w.labels()}}
	role := &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: w.meta(false), Rules: rules}
	binding := &rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: w.meta(false),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: w.name},
		Subjects:   w.subjects(),
	}
	return []client.Object{sa, role, binding}
}

// roleBinding binds the workload's ServiceAccount to the Role role in
// namespace, as the RoleBinding name.
func (w workload) roleBinding(namespace, name, role string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: w.labels()},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
		Subjects:   w.subjects(),
	}
}

func (w workload) subjects() []rbacv1.Subject {
	return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: w.namespace, Name: w.sa}}
}

// Placement is where a workload's pods may run, as KubeVirt's
// NodePlacement (spec.infra and spec.workloads of the KubeVirt CR): nodes
// with these labels, the affinity's node and pod terms, and taints these
// tolerations allow. The daemons' own preference to spread their replicas
// over nodes is kept unless Affinity has pod anti-affinity of its own.
type Placement struct {
	NodeSelector map[string]string
	Affinity     *corev1.Affinity
	Tolerations  []corev1.Toleration
}

// PlacementOf is p as deploy takes it; nil is anywhere.
func PlacementOf(p *virtv1.NodePlacement) Placement {
	if p == nil {
		return Placement{}
	}
	return Placement{NodeSelector: p.NodeSelector, Affinity: p.Affinity.DeepCopy(), Tolerations: p.Tolerations}
}

// podSpec fills in what every daemon's pod has: its ServiceAccount, Linux
// nodes of its placement, and, with apiServer set, the host's network and
// the apiserver's address in the variables rest.InClusterConfig reads.
func (w workload) podSpec(spec corev1.PodSpec) corev1.PodSpec {
	yes := true
	spec.ServiceAccountName = w.sa
	spec.AutomountServiceAccountToken = &yes
	spec.NodeSelector = map[string]string{corev1.LabelOSStable: "linux"}
	for k, v := range w.placement.NodeSelector {
		spec.NodeSelector[k] = v
	}
	spec.Tolerations = append(spec.Tolerations, w.placement.Tolerations...)
	if a := w.placement.Affinity; a != nil {
		own := spec.Affinity
		spec.Affinity = a.DeepCopy()
		if spec.Affinity.PodAntiAffinity == nil && own != nil {
			spec.Affinity.PodAntiAffinity = own.PodAntiAffinity
		}
	}
	spec.DNSPolicy = corev1.DNSClusterFirst
	var env []corev1.EnvVar
	if w.apiServer != "" {
		host, p, _ := net.SplitHostPort(w.apiServer)
		// A container's own variables win over the kubelet's service links
		// of the same name.
		env = append(env, corev1.EnvVar{Name: "KUBERNETES_SERVICE_HOST", Value: host}, corev1.EnvVar{Name: "KUBERNETES_SERVICE_PORT", Value: p})
		spec.HostNetwork, spec.DNSPolicy = true, corev1.DNSClusterFirstWithHostNet
	}
	for i := range spec.Containers {
		spec.Containers[i].Env = append(append([]corev1.EnvVar(nil), spec.Containers[i].Env...), env...)
	}
	return spec
}

// managerPod is the pod of a daemon that is a controller-runtime manager
// (virt-controller, virt-operator): one non-root container of image with
// args, ready and alive by /readyz and /healthz on probePort.
func (w workload) managerPod(pull corev1.PullPolicy, args []string, probePort int32, env []corev1.EnvVar, ports ...corev1.ContainerPort) corev1.PodSpec {
	probe := func(p string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: p, Port: intstr.FromInt32(probePort)}},
			PeriodSeconds: 5, FailureThreshold: 3}
	}
	return w.daemonPod(corev1.Container{
		ImagePullPolicy: pull,
		Args:            args,
		Env:             env,
		Ports:           append(ports, corev1.ContainerPort{Name: "probes", ContainerPort: probePort, Protocol: corev1.ProtocolTCP}),
		ReadinessProbe:  probe("/readyz"),
		LivenessProbe:   probe("/healthz"),
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("150Mi")}},
	}, nil)
}

// daemonPod is the pod of one of the daemons that need nothing of the
// node: c, with the workload's name and image, the non-root security
// context and the termination message from the logs, alone in a pod of
// system-cluster-critical priority spread over the nodes, with volumes.
func (w workload) daemonPod(c corev1.Container, volumes []corev1.Volume) corev1.PodSpec {
	c.Name, c.Image = w.name, w.image
	c.SecurityContext = nonRootContainer()
	c.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	return corev1.PodSpec{
		PriorityClassName: "system-cluster-critical",
		Affinity:          spread(w.name),
		SecurityContext:   nonRootPod(),
		Containers:        []corev1.Container{c},
		Volumes:           volumes,
	}
}

// secretMount is a Secret mounted read-only into a daemon's container at
// dir: the keys items name, or all of them.
type secretMount struct {
	name, dir, secret string
	items             []corev1.KeyToPath
}

// servingPod is the pod of a daemon that serves HTTPS on port (virt-api,
// virt-exportproxy): one non-root container of image with args, ready by
// /healthz over HTTPS on port, requesting memory, with its Secrets
// mounted read-only.
func (w workload) servingPod(pull corev1.PullPolicy, args []string, port int32, memory string, secrets []secretMount, ports ...corev1.ContainerPort) corev1.PodSpec {
	https := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: "/healthz", Port: intstr.FromInt32(port), Scheme: corev1.URISchemeHTTPS}}, PeriodSeconds: 5, FailureThreshold: 3}
	var mounts []corev1.VolumeMount
	var volumes []corev1.Volume
	for _, m := range secrets {
		mounts = append(mounts, corev1.VolumeMount{Name: m.name, MountPath: m.dir, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: m.name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: m.secret, Items: m.items}}})
	}
	return w.daemonPod(corev1.Container{
		ImagePullPolicy: pull,
		Args:            args,
		Ports:           append([]corev1.ContainerPort{{Name: "https", ContainerPort: port, Protocol: corev1.ProtocolTCP}}, ports...),
		ReadinessProbe:  https,
		VolumeMounts:    mounts,
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("5m"), corev1.ResourceMemory: resource.MustParse(memory)}},
	}, volumes)
}

// listen is ":port".
func listen(p int32) string { return ":" + strconv.Itoa(int(p)) }

// joinErrs is errors.Join of the slices.
func joinErrs(errs ...[]error) error {
	var all []error
	for _, e := range errs {
		all = append(all, e...)
	}
	return errors.Join(all...)
}
