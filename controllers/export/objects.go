package export

import (
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	exportv1 "kubevirt.io/api/export/v1beta1"

	"github.com/virtkit/virtkit/virt/storage/export"
	exporttoken "github.com/virtkit/virtkit/virt/storage/export/token"
)

// Where a server pod finds its certificate and token.
const (
	certDir     = "/cert"
	tokenDir    = "/token"
	manifestDir = "/manifest_data"
	container   = "exporter"
	// caKey is the key of the CA bundle in the certificate's Secret,
	// next to tls.crt and tls.key.
	caKey = "ca.crt"
)

// serverUser is the user (and fsGroup) export server pods run as: QEMU's,
// as KubeVirt's export pods, so that they read the disks guests wrote.
const serverUser = 107

// PodParams are what a server pod is made with.
type PodParams struct {
	Image      string
	PullPolicy corev1.PullPolicy
	// CertSecret and TokenSecret name the Secrets of its certificate
	// (kubernetes.io/tls) and its token (key token).
	CertSecret, TokenSecret string
	// Deadline is when the server stops.
	Deadline time.Time
	// Manifests, when set, names the ConfigMap of the VM manifests.
	Manifests string
}

func owner(vme *exportv1.VirtualMachineExport) metav1.OwnerReference {
	return *metav1.NewControllerRef(vme, exportv1.SchemeGroupVersion.WithKind("VirtualMachineExport"))
}

// ServerPod is the export server pod of vme serving vols: KubeVirt's
// name, labels and security settings; the claims mounted read-only (a
// Block claim's device at its path); the configuration in its
// environment; ready once the server answers.
func ServerPod(vme *exportv1.VirtualMachineExport, vols []export.Volume, p PodParams) (*corev1.Pod, error) {
	cfg := export.Config{Export: vme.Name, CertFile: certDir + "/" + corev1.TLSCertKey, KeyFile: certDir + "/" + corev1.TLSPrivateKeyKey,
		TokenFile: tokenDir + "/" + exporttoken.Key, Deadline: p.Deadline, Volumes: vols}
	if p.Manifests != "" {
		cfg.ManifestDir = manifestDir
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("export %s/%s: %w", vme.Namespace, vme.Name, err)
	}
	kv, err := cfg.Env()
	if err != nil {
		return nil, err
	}
	env := make([]corev1.EnvVar, 0, len(kv))
	for _, e := range kv {
		env = append(env, corev1.EnvVar{Name: e[0], Value: e[1]})
	}
	labels := maps.Clone(vme.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[export.ServiceSelectorLabel] = export.SelectorValue(vme.Name)
	c := corev1.Container{
		Name: container, Image: p.Image, ImagePullPolicy: p.PullPolicy, Command: []string{export.Binary}, Env: env,
		Ports: []corev1.ContainerPort{{Name: export.PortName, ContainerPort: export.ServerPort, Protocol: corev1.ProtocolTCP}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: export.ReadyPath,
				Port: intstr.FromInt32(export.ServerPort), Scheme: corev1.URISchemeHTTPS}},
			PeriodSeconds: 1, FailureThreshold: 3,
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "certificates", MountPath: certDir, ReadOnly: true}, {Name: "token", MountPath: tokenDir, ReadOnly: true}},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: export.PodName(vme.Name), Namespace: vme.Namespace, Labels: labels,
			Annotations: maps.Clone(vme.Annotations), OwnerReferences: []metav1.OwnerReference{owner(vme)}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](serverUser),
				RunAsGroup: ptr.To[int64](serverUser), FSGroup: ptr.To[int64](serverUser),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			AutomountServiceAccountToken: ptr.To(false),
			Volumes: []corev1.Volume{
				{Name: "certificates", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: p.CertSecret}}},
				{Name: "token", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: p.TokenSecret}}},
			},
		},
	}
	for i, v := range vols {
		name := fmt.Sprintf("volume-%d", i)
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.Claim, ReadOnly: true}}})
		if v.Block {
			c.VolumeDevices = append(c.VolumeDevices, corev1.VolumeDevice{Name: name, DevicePath: v.Path})
		} else {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: v.Path, ReadOnly: true})
		}
	}
	if p.Manifests != "" {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "manifest-data", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: p.Manifests}}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "manifest-data", MountPath: manifestDir, ReadOnly: true})
	}
	pod.Spec.Containers = []corev1.Container{c}
	return pod, nil
}

// Service is the Service of vme: port 443 to its server pod's 8443.
func Service(vme *exportv1.VirtualMachineExport) *corev1.Service {
	labels := maps.Clone(vme.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[export.AppLabel] = export.AppLabelValue
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: export.ServiceName(vme.Name), Namespace: vme.Namespace, Labels: labels,
			Annotations: maps.Clone(vme.Annotations), OwnerReferences: []metav1.OwnerReference{owner(vme)}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{export.ServiceSelectorLabel: export.SelectorValue(vme.Name)},
			Ports: []corev1.ServicePort{{Name: export.PortName, Protocol: corev1.ProtocolTCP, Port: export.ServicePort,
				TargetPort: intstr.FromInt32(export.ServerPort)}},
		},
	}
}

// serviceNames are the host names vme's server answers to: its Service's.
func serviceNames(vme *exportv1.VirtualMachineExport) []string {
	host := export.ServiceHost(vme.Namespace, vme.Name)
	svc := export.ServiceName(vme.Name)
	return []string{host, svc, svc + "." + vme.Namespace, host + ".cluster.local"}
}
