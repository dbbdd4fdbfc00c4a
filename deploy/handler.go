package deploy

import (
	"errors"
	"fmt"
	"path"

	appsv1 "k8s.io/api/apps/v1"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	virtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virt/network"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
)

// Handler says how virt-handler runs on a cluster's nodes: one pod per node
// of a DaemonSet, as KubeVirt's virt-handler does.
type Handler struct {
	// Namespace holds the DaemonSet, its ServiceAccount and its certificate
	// Secret (required).
	Namespace string
	// Image is virt-handler's image (required).
	Image string
	// PullPolicy is the image's pull policy; empty is Kubernetes' default.
	PullPolicy corev1.PullPolicy
	// TLSSecret names a kubernetes.io/tls Secret in Namespace with the node
	// API's serving certificate (tls.crt, tls.key) and the CA of the client
	// certificates it accepts, virt-api's (ca.crt) (required: the node API
	// pauses guests and opens their consoles, so it never speaks plain HTTP).
	// The handler publishes https://POD_IP:NodeAPIPort on its Node; with
	// APIServer set, POD_IP is the node's address, which the certificate
	// must then name.
	TLSSecret string
	// Placement limits the nodes the DaemonSet runs on, and so the nodes
	// VMs can run on; empty is every Linux node.
	Placement Placement
	// Emulation makes the nodes never use KVM, whatever the KubeVirt CR
	// says: every guest runs under software emulation, the handler offers
	// no devices.kubevirt.io/kvm, and the node labeller asks about
	// emulated guests. For clusters whose /dev/kvm is present but must not
	// be used. Without it the handler follows the CR's
	// developerConfiguration.useEmulation at each guest's start, and the
	// labeller asks about KVM where /dev/kvm exists.
	Emulation bool
	// LauncherImage, when set, runs the launcher's host CPU probe as an init
	// container (KubeVirt's node labeller: a private libvirtd says which CPU
	// models and features a guest can have on the node), and the handler
	// labels its node with them (virt/nodelabels). Empty: no CPU labels.
	LauncherImage string
	// DevicePluginDir is the node folder where the kubelet takes device
	// plugin registrations and the handler serves its plugins; default
	// /var/lib/kubelet/device-plugins, which the kubelet keeps there
	// whatever its --root-dir.
	DevicePluginDir string
	// PodsDir is the node folder of the kubelet's pods (its --root-dir's
	// pods), where the handler finds each launcher pod's folder, an
	// emptyDir; default /var/lib/kubelet/pods.
	PodsDir string
	// StateDir is the node folder of the handler's records of the guests
	// it started, which a restarted handler reads; default
	// /var/run/virtkit/handler (gone with a reboot, as the guests are).
	StateDir string
	// NodeAPIPort, ProbePort and MetricsPort are the ports the handler
	// listens on; defaults 8186, 8187 and 8188.
	NodeAPIPort, ProbePort, MetricsPort int32
	// MigrationPort is where the handler takes migrations from other
	// nodes' handlers, on its pod's address; default 8185.
	MigrationPort int32
	// MigrationCA, when set, names the ConfigMap key of the CA bundle that
	// nodes' migration certificates are checked with; each handler then
	// asks for its node's certificate through the CertificateSigningRequest
	// API (signer certs.NodeSigner, which virt-operator runs). Unset: the
	// handlers have no migration certificate, and only migrations with
	// migrations.disableTLS go between nodes.
	MigrationCA *ConfigMapKey
	// MigrationNetwork is KubeVirt's dedicated migration network
	// (migrations.network): a Multus NetworkAttachmentDefinition, NAME in
	// Namespace or NAMESPACE/NAME. The handler's pod joins it as interface
	// migration0 (virtv1.MigrationInterfaceName), whose address the handler
	// then takes migrations on. Empty: the pod network. It needs the pod
	// network, so not with APIServer.
	MigrationNetwork string
	// APIServer, "host:port", is where the handler reaches the apiserver,
	// for a cluster whose pods cannot reach the kubernetes Service (a
	// single-machine cluster without kube-proxy, whose apiserver listens on
	// loopback). The handler then takes the host's network. Empty: the
	// in-cluster default, the kubernetes Service.
	APIServer string
}

// MultusNetworksAnnotation is Multus's pod annotation of the networks a
// pod joins besides its own (here the short form, NETWORK@INTERFACE).
const MultusNetworksAnnotation = network.MultusNetworksAnnotation

// HandlerName names virt-handler's DaemonSet, ServiceAccount, ClusterRole
// and ClusterRoleBinding, and is the kubevirt.io label of its pods.
const HandlerName = nodeapi.HandlerAppLabel

// Paths inside virt-handler's pod: the kubelet's pods at contract.PodsDir,
// the records at contract.HandlerStateDir and the device plugins at
// handlerPluginDir, whatever the node's folders (Handler.PodsDir,
// Handler.StateDir, Handler.DevicePluginDir).
const (
	handlerCertDir   = "/etc/virt-handler/certs"
	handlerPluginDir = "/var/lib/kubelet/device-plugins"
	// handlerProbeDir is the emptyDir where the host CPU probe writes and
	// the handler reads.
	handlerProbeDir = "/var/lib/virtkit/node-labeller"
)

func (h Handler) workload() workload {
	return workload{kind: "Handler", namespace: h.Namespace, image: h.Image, name: HandlerName, sa: HandlerServiceAccount,
		placement: h.Placement, apiServer: h.APIServer}
}

func (h Handler) withDefaults() (Handler, error) {
	errs := h.workload().check()
	if h.TLSSecret == "" {
		errs = append(errs, errors.New("deploy: Handler.TLSSecret: required (the node API needs a certificate)"))
	}
	errs = append(errs, checkPorts("Handler", port{"NodeAPIPort", &h.NodeAPIPort, 8186}, port{"ProbePort", &h.ProbePort, 8187},
		port{"MetricsPort", &h.MetricsPort, 8188}, port{"MigrationPort", &h.MigrationPort, 8185})...)
	if h.StateDir == "" {
		h.StateDir = contract.HandlerStateDir
	}
	if !path.IsAbs(h.StateDir) {
		errs = append(errs, fmt.Errorf("deploy: Handler.StateDir %q: must be absolute", h.StateDir))
	}
	if h.PodsDir == "" {
		h.PodsDir = contract.PodsDir
	}
	if !path.IsAbs(h.PodsDir) {
		errs = append(errs, fmt.Errorf("deploy: Handler.PodsDir %q: must be absolute", h.PodsDir))
	}
	if h.DevicePluginDir == "" {
		h.DevicePluginDir = handlerPluginDir
	}
	if !path.IsAbs(h.DevicePluginDir) {
		errs = append(errs, fmt.Errorf("deploy: Handler.DevicePluginDir %q: must be absolute", h.DevicePluginDir))
	}
	if h.MigrationNetwork != "" && h.APIServer != "" {
		// Multus attaches no network to a pod on its node's network.
		errs = append(errs, fmt.Errorf("deploy: Handler.MigrationNetwork %q: needs the pod network, and Handler.APIServer puts the handler on its node's", h.MigrationNetwork))
	}
	return h, errors.Join(errs...)
}

// HandlerObjects returns virt-handler's ServiceAccount, its ClusterRole and
// binding, its DaemonSet, and the ValidatingAdmissionPolicy (and binding)
// HandlerNodeRestriction that lets each handler write only its own Node
// and the VMIs on it. The Secret named by Handler.TLSSecret is the
// caller's: it holds keys.
//
// The pod is privileged and shares the host's PID namespace, as KubeVirt's
// virt-handler: it finds each launcher's libvirtd by the peer PID of its
// socket and enters that pod's network namespace and file system through
// /proc, creates the guest's tap and bridge there, and serves the
// kubelet's device plugins. It mounts the kubelet's pods folder, where
// each launcher pod's folder is, and its own records.
func HandlerObjects(h Handler) ([]client.Object, error) {
	h, err := h.withDefaults()
	if err != nil {
		return nil, err
	}
	w := h.workload()
	template := metav1.ObjectMeta{Labels: w.podLabels()}
	if h.MigrationNetwork != "" {
		// As KubeVirt's operator does: a change of network rolls the
		// handlers, each of which reads its interface when it starts.
		template.Annotations = map[string]string{MultusNetworksAnnotation: h.MigrationNetwork + "@" + virtv1.MigrationInterfaceName}
	}
	ds := &appsv1.DaemonSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"}, ObjectMeta: w.meta(true),
		Spec: appsv1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{virtv1.AppLabel: HandlerName}},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType},
			Template:       corev1.PodTemplateSpec{ObjectMeta: template, Spec: w.podSpec(handlerPod(h))},
		}}
	objs := append(w.identity(handlerRules()), ds)
	return append(objs, handlerNodeRestriction(h)...), nil
}

// handlerRules is what virt-handler does with the API: it follows and
// reports the VMIs of its node, reads migrations and the claims its guests
// name, lists the launcher pods of its VMIs (to find each pod's folder by
// its UID), beats on its Node, records events, and asks for its node's
// migration certificate (which only virt-operator approves and signs, and
// only for the node the asking pod runs on). It reads no Secrets: the
// cloud-init secrets a guest names reach it through the launcher pod's own
// secret volumes.
func handlerRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{certv1.GroupName}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get"}},
		{APIGroups: []string{virtv1.SchemeGroupVersion.Group}, Resources: []string{"virtualmachineinstances"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
		{APIGroups: []string{virtv1.SchemeGroupVersion.Group}, Resources: []string{"virtualmachineinstances/status"}, Verbs: []string{"update", "patch"}},
		{APIGroups: []string{virtv1.SchemeGroupVersion.Group}, Resources: []string{"virtualmachineinstancemigrations"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{virtv1.SchemeGroupVersion.Group}, Resources: []string{"kubevirts"}, Verbs: []string{"list"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
		{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get"}},
		// A hotplugged claim's volume: where the node mounted it for the
		// attachment pod.
		{APIGroups: []string{""}, Resources: []string{"persistentvolumes"}, Verbs: []string{"get"}},
		// A VMI's DataVolumes, read before its guest starts: none may be
		// still filling.
		{APIGroups: []string{cdiv1.SchemeGroupVersion.Group}, Resources: []string{"datavolumes"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
}

// MigrationPortName names the handler container's port of migrations
// from other nodes.
const MigrationPortName = "migration"

// ConfigMapKey is one key of a ConfigMap in the installation's namespace.
type ConfigMapKey struct{ Name, Key string }

// handlerMigrationCADir is where the handler's pod mounts Handler.MigrationCA.
const handlerMigrationCADir = "/etc/virt-handler/migration-ca"

// handlerPod is the DaemonSet's pod.
func handlerPod(h Handler) corev1.PodSpec {
	yes, no := true, false
	bidirectional := corev1.MountPropagationBidirectional
	dirOrCreate, dir := corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory
	hostPath := func(name, p string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p, Type: &dirOrCreate}}}
	}
	args := []string{
		"--node-api-address=" + listen(h.NodeAPIPort),
		"--advertise-address=https://$(POD_IP)" + listen(h.NodeAPIPort),
		"--tls-cert-file=" + path.Join(handlerCertDir, corev1.TLSCertKey),
		"--tls-key-file=" + path.Join(handlerCertDir, corev1.TLSPrivateKeyKey),
		"--client-ca-file=" + path.Join(handlerCertDir, corev1.ServiceAccountRootCAKey),
		"--health-probe-bind-address=" + listen(h.ProbePort),
		"--metrics-bind-address=" + listen(h.MetricsPort),
		"--device-plugin-dir=" + handlerPluginDir,
		"--pods-dir=" + contract.PodsDir,
		"--state-dir=" + contract.HandlerStateDir,
		"--namespace=" + h.Namespace,
		"--migration-address=" + listen(h.MigrationPort),
		"--migration-advertise-host=$(POD_IP)",
	}
	if h.Emulation {
		args = append(args, "--emulation")
	}
	if h.MigrationCA != nil {
		args = append(args, "--migration-ca-file="+path.Join(handlerMigrationCADir, h.MigrationCA.Key),
			"--migration-cert-signer="+certs.NodeSigner)
	}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(h.ProbePort)}},
		PeriodSeconds: 5, FailureThreshold: 3}
	grace := int64(30)
	spec := corev1.PodSpec{
		HostPID:                       true,
		PriorityClassName:             "system-node-critical",
		TerminationGracePeriodSeconds: &grace,
		// A handler belongs on every node it is meant for, whatever taints
		// it has, as KubeVirt's DaemonSet.
		Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		Containers: []corev1.Container{{
			Name:            HandlerName,
			Image:           h.Image,
			ImagePullPolicy: h.PullPolicy,
			Args:            args,
			Env: []corev1.EnvVar{
				{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
				// With the host's network, the pod's address is its node's.
				{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			},
			Ports: []corev1.ContainerPort{
				{Name: nodeapi.PortName, ContainerPort: h.NodeAPIPort, Protocol: corev1.ProtocolTCP},
				{Name: MigrationPortName, ContainerPort: h.MigrationPort, Protocol: corev1.ProtocolTCP},
				metricsPort(h.MetricsPort),
			},
			ReadinessProbe: probe,
			SecurityContext: &corev1.SecurityContext{
				Privileged: &yes, RunAsUser: new(int64), RunAsNonRoot: &no,
			},
			VolumeMounts: []corev1.VolumeMount{
				// Bidirectional: the claims the kubelet mounts for
				// attachment pods appear here, and the hotplugged images
				// the handler binds into launcher pods reach them.
				{Name: "kubelet-pods", MountPath: contract.PodsDir, MountPropagation: &bidirectional},
				{Name: "records", MountPath: contract.HandlerStateDir},
				{Name: "device-plugins", MountPath: handlerPluginDir},
				{Name: "certs", MountPath: handlerCertDir, ReadOnly: true},
			},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("100Mi")}},
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		}},
		Volumes: []corev1.Volume{
			// The kubelet's own folder: it must be there, not made empty.
			{Name: "kubelet-pods", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: h.PodsDir, Type: &dir}}},
			hostPath("records", h.StateDir),
			hostPath("device-plugins", h.DevicePluginDir),
			{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: h.TLSSecret}}},
		},
	}
	if h.MigrationCA != nil {
		c := &spec.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "migration-ca", MountPath: handlerMigrationCADir, ReadOnly: true})
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "migration-ca", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: h.MigrationCA.Name}}}})
	}
	if h.LauncherImage != "" {
		withNodeLabeller(&spec, h)
	}
	return spec
}

// withNodeLabeller adds the launcher's host CPU probe to the handler's pod:
// an init container of the launcher image, privileged as the handler is
// (its private libvirtd takes a mount namespace of its own, and under KVM
// opens /dev/kvm), writing into an emptyDir the handler reads at start.
func withNodeLabeller(spec *corev1.PodSpec, h Handler) {
	yes := true
	virtType := contract.VirtTypeAuto
	if h.Emulation {
		virtType = contract.VirtTypeQEMU
	}
	spec.InitContainers = append(spec.InitContainers, corev1.Container{
		Name:            "node-labeller",
		Image:           h.LauncherImage,
		ImagePullPolicy: h.PullPolicy,
		Command:         []string{contract.Binary, "--" + contract.FlagProbeHostCPU, handlerProbeDir, "--" + contract.FlagVirtType, virtType},
		SecurityContext: &corev1.SecurityContext{Privileged: &yes, RunAsUser: new(int64)},
		VolumeMounts:    []corev1.VolumeMount{{Name: "node-labeller", MountPath: handlerProbeDir}},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("100Mi")}},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	})
	c := &spec.Containers[0]
	c.Args = append(c.Args, "--node-labeller-dir="+handlerProbeDir)
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "node-labeller", MountPath: handlerProbeDir, ReadOnly: true})
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "node-labeller", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
}
