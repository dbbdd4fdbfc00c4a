package datavolume

import (
	"path"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/virtkit/virtkit/controllers/cdiconfig"
	"github.com/virtkit/virtkit/virt/storage/dvspec"
	"github.com/virtkit/virtkit/virt/storage/importer/contract"
	"github.com/virtkit/virtkit/virt/storage/upload"
)

// PodOptions are what an importer pod is made with.
type PodOptions struct {
	// Image is the importer's image (virtkit/virt-importer).
	Image string
	// PullPolicy is its pull policy.
	PullPolicy corev1.PullPolicy
	// FilesystemOverhead is the share of a file-system claim kept for its
	// file system (contract.DefaultFilesystemOverhead when zero).
	FilesystemOverhead float64
	// UploadClientCA is the CA (PEM) of the upload proxy's client
	// certificate, which upload pods require of whoever sends them an
	// image. Without it, DataVolumes with an upload source wait, saying
	// so.
	UploadClientCA []byte
	// UploadClientName is the common name of the proxy's client
	// certificate.
	UploadClientName string
	// Resources are the requests and limits of the pod's container (the
	// CDIConfig's status.defaultPodResourceRequirements); zero: CDI's
	// defaults (cdiconfig.PodResources).
	Resources corev1.ResourceRequirements
	// ProxyEnv names the proxy an importer reaches web servers through
	// (the CDIConfig's status.importProxy, cdiconfig.ProxyEnv); nil: none.
	ProxyEnv []corev1.EnvVar
	// Preallocation is whether disks are preallocated when a DataVolume's
	// spec.preallocation does not say (the CDIConfig's
	// status.preallocation).
	Preallocation bool
	// TrustedCAProxy names the ConfigMap of the import proxy's CAs in the
	// controller's namespace (the CDIConfig's
	// status.importProxy.trustedCAProxy); "" none. Importers of web and
	// registry sources mount a copy in their namespace
	// (ProxyCAConfigMapName) and trust its CAs besides the others.
	TrustedCAProxy string
	// InsecureRegistries are the registries an importer pulls from
	// without checking their certificates, or over plain HTTP (the
	// CDIConfig's spec.insecureRegistries).
	InsecureRegistries []string
	// ScratchClass is the storage class of scratch claims (the
	// CDIConfig's status.scratchSpaceStorageClass); "": the filled
	// claim's.
	ScratchClass string
	// ScratchOverhead is the share of a scratch claim kept for its file
	// system; zero: FilesystemOverhead.
	ScratchOverhead float64
}

// DefaultCloneClientName names the client certificate of a clone's source
// pod when no upload client name is set.
const DefaultCloneClientName = "virtkit-clone-source"

// clientName is the common name an upload pod requires of its clients.
func (o PodOptions) clientName() string {
	if o.UploadClientName == "" {
		return DefaultCloneClientName
	}
	return o.UploadClientName
}

// resources is Resources, defaulted.
func (o PodOptions) resources() corev1.ResourceRequirements {
	if len(o.Resources.Requests) == 0 && len(o.Resources.Limits) == 0 {
		return *cdiconfig.PodResources(nil)
	}
	return *o.Resources.DeepCopy()
}

// overhead is FilesystemOverhead, defaulted.
func (o PodOptions) overhead() float64 {
	if o.FilesystemOverhead == 0 {
		return contract.DefaultFilesystemOverhead
	}
	return o.FilesystemOverhead
}

// scratchOverhead is ScratchOverhead, defaulted.
func (o PodOptions) scratchOverhead() float64 {
	if o.ScratchOverhead == 0 {
		return o.overhead()
	}
	return o.ScratchOverhead
}

// ImporterUser is the user (and fsGroup) importer pods run as: QEMU's, as
// CDI's importer pods, so that the disk they write is the guest's.
const ImporterUser = 107

// ImporterPodName is the name of the pod filling the claim of dv from a
// source other than an upload.
func ImporterPodName(dv *cdiv1.DataVolume) string { return "importer-" + dv.Name }

// PodName is the name of the pod filling the claim of dv from src: an
// upload pod is named as CDI's (dvspec.UploadPodName).
func PodName(dv *cdiv1.DataVolume, src dvspec.Source) string {
	if src.IsUpload() || src.CrossNamespace(dv.Namespace) {
		return dvspec.UploadPodName(dv.Name)
	}
	return ImporterPodName(dv)
}

// UploadSecretName is the name of the Secret holding the TLS files of an
// upload pod.
func UploadSecretName(pod string) string { return pod + "-tls" }

// Keys of an upload Secret that holds, for a clone from another namespace,
// the client certificate and key its source pod presents.
const (
	CloneClientCertKey = "clone-client.crt"
	CloneClientKeyKey  = "clone-client.key"
)

// UploadSecret is the Secret of dv's upload pod called pod: its serving
// certificate and key, and the CA of the proxy's client certificate
// (contract.UploadTLSDir). For a clone from another namespace, cloneCert
// and cloneKey are the source pod's client certificate, which the pod
// trusts too.
func UploadSecret(dv *cdiv1.DataVolume, pod string, certPEM, keyPEM, clientCA, cloneCert, cloneKey []byte) *corev1.Secret {
	sec := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: dv.Namespace, Name: UploadSecretName(pod),
			Labels:          map[string]string{dvspec.LabelApp: dvspec.AppCDI, dvspec.LabelComponent: dvspec.ComponentUploadServer},
			OwnerReferences: []metav1.OwnerReference{dvspec.OwnerRef(dv)}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, corev1.ServiceAccountRootCAKey: clientCA},
	}
	if cloneCert != nil {
		sec.Data[corev1.ServiceAccountRootCAKey] = append(append(append([]byte{}, clientCA...), '\n'), cloneCert...)
		sec.Data[CloneClientCertKey], sec.Data[CloneClientKeyKey] = cloneCert, cloneKey
	}
	return sec
}

// CloneSourcePodName is the name of the pod, in the source claim's
// namespace, that sends a clone's disk to dv's upload pod, as CDI names
// it.
func CloneSourcePodName(dv *cdiv1.DataVolume) string { return string(dv.UID) + "-source-pod" }

// CloneSourceSecret is the Secret of that pod, in the source's namespace:
// the client certificate and key of dv's upload Secret, and the upload
// server's certificate (contract.CloneTLSDir). Nothing owns it across
// namespaces: the controller deletes it, with a finalizer on dv.
func CloneSourceSecret(dv *cdiv1.DataVolume, src dvspec.Source, upload *corev1.Secret) *corev1.Secret {
	name := CloneSourcePodName(dv)
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: src.Claim.Namespace, Name: UploadSecretName(name),
			Labels: map[string]string{dvspec.LabelApp: dvspec.AppCDI, dvspec.LabelComponent: dvspec.ComponentCloneSource}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{corev1.TLSCertKey: upload.Data[CloneClientCertKey], corev1.TLSPrivateKeyKey: upload.Data[CloneClientKeyKey],
			contract.CloneServerCertKey: upload.Data[corev1.TLSCertKey]},
	}
}

// CloneSourcePod is the pod that sends the disk of src's claim, mounted
// read-only, to the upload server at target (https://IP:PORT), with the
// files of its Secret (CloneSourceSecret).
func CloneSourcePod(dv *cdiv1.DataVolume, src dvspec.Source, o PodOptions, target string) *corev1.Pod {
	p := ImporterPod(dv, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: src.Claim.Name}}, dvspec.Source{Kind: contract.SourceSend}, o)
	name := CloneSourcePodName(dv)
	p.Namespace, p.Name, p.OwnerReferences = src.Claim.Namespace, name, nil
	p.Labels[dvspec.LabelComponent] = dvspec.ComponentCloneSource
	c := &p.Spec.Containers[0]
	c.Name = "cdi-clone-source"
	c.Ports = nil
	args := contract.Args{Source: contract.SourceSend, Path: path.Join(contract.SourceDir, contract.DiskImage),
		Name: src.Describe(), URL: target}
	c.Command = args.Command()
	c.VolumeMounts = []corev1.VolumeMount{
		{Name: "cdi-source-vol", MountPath: contract.SourceDir, ReadOnly: true},
		{Name: "cdi-clone-tls", MountPath: contract.CloneTLSDir, ReadOnly: true},
	}
	c.VolumeDevices = nil
	p.Spec.Volumes = []corev1.Volume{
		{Name: "cdi-source-vol", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: src.Claim.Name, ReadOnly: true}}},
		{Name: "cdi-clone-tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: UploadSecretName(name)}}},
	}
	return p
}

// UploadPod is the importer pod of an upload source: it serves the upload
// server on contract.UploadPort with the files of its Secret
// (UploadSecret), is ready once it takes connections, and carries its
// certificate for the proxy to pin (contract.AnnUploadServerCert). clone
// says it receives a host-assisted clone's stream rather than a user's
// image.
func UploadPod(dv *cdiv1.DataVolume, pvc *corev1.PersistentVolumeClaim, o PodOptions, certPEM []byte, clone bool) *corev1.Pod {
	p := fillingPod(dv, pvc, dvspec.Source{Kind: contract.SourceUpload}, o, wantsScratch(dv, pvc, contract.SourceUpload, clone))
	p.Name = dvspec.UploadPodName(dv.Name)
	p.Annotations = map[string]string{contract.AnnUploadServerCert: string(certPEM)}
	p.Labels[dvspec.LabelComponent] = dvspec.ComponentUploadServer
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "cdi-upload-tls", VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: UploadSecretName(p.Name)}}})
	c := &p.Spec.Containers[0]
	c.Name = "cdi-upload-server"
	c.Ports = []corev1.ContainerPort{{Name: "upload", ContainerPort: contract.UploadPort, Protocol: corev1.ProtocolTCP}}
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "cdi-upload-tls", MountPath: contract.UploadTLSDir, ReadOnly: true})
	c.ReadinessProbe = &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: upload.HealthPath, Port: intstr.FromInt32(contract.UploadPort), Scheme: corev1.URISchemeHTTPS}},
		PeriodSeconds: 2, FailureThreshold: 3,
	}
	return p
}

// ImporterPod returns the pod that fills pvc from src for dv: the importer
// with the claim mounted (contract.DataDir, or contract.BlockDevice for a
// block claim), its scratch claim (ScratchClaimName, at
// contract.ScratchDir) when it wants one (wantsScratch), the source's CA
// bundle and credentials, restarted on failure, as a non-root user without
// capabilities on a read-only root file system.
func ImporterPod(dv *cdiv1.DataVolume, pvc *corev1.PersistentVolumeClaim, src dvspec.Source, o PodOptions) *corev1.Pod {
	return fillingPod(dv, pvc, src, o, wantsScratch(dv, pvc, src.Kind, false))
}

// fillingPod is ImporterPod, with a scratch claim when scratch says so.
func fillingPod(dv *cdiv1.DataVolume, pvc *corev1.PersistentVolumeClaim, src dvspec.Source, o PodOptions, scratch bool) *corev1.Pod {
	overhead := o.overhead()
	capacity := dvspec.ClaimCapacity(pvc)
	args := contract.Args{Source: src.Kind, OwnerUID: string(dv.UID)}
	if src.IsUpload() {
		args.ClientName = o.clientName()
	}
	c := corev1.Container{
		Name: "importer", Image: o.Image, ImagePullPolicy: o.PullPolicy,
		TerminationMessagePath:   contract.TerminationMessagePath,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		Ports:                    []corev1.ContainerPort{{Name: "metrics", ContainerPort: contract.ProgressPort, Protocol: corev1.ProtocolTCP}},
		// The CDIConfig's, CDI's by default: a conversion is limited to
		// 750m of CPU and 600M of memory unless the CDIConfig says more.
		Resources: o.resources(),
		Env:       append([]corev1.EnvVar(nil), o.ProxyEnv...),
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(ImporterUser)), RunAsGroup: ptr.To(int64(ImporterUser)),
			AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
			Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
	volumes := []corev1.Volume{{Name: "cdi-data-vol", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}}}
	switch {
	case dvspec.IsBlock(pvc):
		args.Target, args.Block, args.Size = contract.BlockDevice, true, capacity
		c.VolumeDevices = []corev1.VolumeDevice{{Name: "cdi-data-vol", DevicePath: contract.BlockDevice}}
	case dvspec.IsArchive(dv) && src.Kind != contract.SourceSend:
		// The archive's files go into the claim's file system.
		args.Target, args.Archive, args.Size = contract.DataDir, true, contract.UsableSpace(capacity, overhead)
		c.VolumeMounts = []corev1.VolumeMount{{Name: "cdi-data-vol", MountPath: contract.DataDir}}
	default:
		args.Target, args.Size = path.Join(contract.DataDir, contract.DiskImage), contract.UsableSpace(capacity, overhead)
		// As CDI: the DataVolume's choice, else the CDIConfig's.
		args.Preallocate = src.Kind != contract.SourceSend && ptr.Deref(dv.Spec.Preallocation, o.Preallocation)
		c.VolumeMounts = []corev1.VolumeMount{{Name: "cdi-data-vol", MountPath: contract.DataDir}}
	}
	if scratch {
		args.Scratch = contract.ScratchDir
		volumes = append(volumes, corev1.Volume{Name: scratchVolume, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: ScratchClaimName(pvc.Name)}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: scratchVolume, MountPath: contract.ScratchDir})
	}
	switch {
	case src.Registry != nil:
		args.URL, args.Architecture = contract.RegistryScheme+src.Image, src.Registry.Architecture
		args.InsecureRegistry = cdiconfig.IsInsecureRegistry(o.InsecureRegistries, src.Image)
		volumes = withCredentials(&c, volumes, src.Registry.SecretRef, src.Registry.CertConfigMap, &args)
	case src.Image != "":
		// pullMethod node: the node pulls the image as a volume.
		args.Path, args.Name = path.Join(contract.SourceDir, contract.ImageDiskDir), src.Describe()
		volumes = append(volumes, corev1.Volume{Name: "cdi-source-vol", VolumeSource: corev1.VolumeSource{
			Image: &corev1.ImageVolumeSource{Reference: src.Image, PullPolicy: corev1.PullIfNotPresent}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "cdi-source-vol", MountPath: contract.SourceDir, ReadOnly: true})
	case src.Claim != nil:
		args.Path, args.Name = path.Join(contract.SourceDir, contract.DiskImage), src.Describe()
		volumes = append(volumes, corev1.Volume{Name: "cdi-source-vol", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: src.Claim.Name, ReadOnly: true}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "cdi-source-vol", MountPath: contract.SourceDir, ReadOnly: true})
	}
	if h := src.HTTP; h != nil {
		args.URL, args.Headers, args.Checksum = h.URL, h.ExtraHeaders, h.Checksum
		volumes = withCredentials(&c, volumes, h.SecretRef, h.CertConfigMap, &args)
	}
	if usesProxyCA(src, o) {
		args.ProxyCertDir = contract.ProxyCertsDir
		volumes = append(volumes, corev1.Volume{Name: proxyCAVolume, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: ProxyCAConfigMapName(pvc.Name)}}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: proxyCAVolume, MountPath: contract.ProxyCertsDir, ReadOnly: true})
	}
	c.Command = args.Command()
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: dv.Namespace, Name: PodName(dv, src),
			Labels:          map[string]string{dvspec.LabelApp: dvspec.AppCDI, dvspec.LabelComponent: dvspec.ComponentImporter},
			OwnerReferences: []metav1.OwnerReference{dvspec.OwnerRef(dv)},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyOnFailure,
			AutomountServiceAccountToken: ptr.To(false),
			PriorityClassName:            dv.Spec.PriorityClassName,
			SecurityContext:              &corev1.PodSecurityContext{FSGroup: ptr.To(int64(ImporterUser)), RunAsNonRoot: ptr.To(true)},
			Containers:                   []corev1.Container{c},
			Volumes:                      volumes,
		},
	}
}

// withCredentials gives the importer container c a source's credentials,
// the keys accessKeyId and secretKey of Secret secret as environment
// variables, and its CAs, the ConfigMap certs mounted at contract.CertsDir
// (args' CertDir); either may be "". It returns volumes with the
// ConfigMap's.
func withCredentials(c *corev1.Container, volumes []corev1.Volume, secret, certs string, args *contract.Args) []corev1.Volume {
	if certs != "" {
		args.CertDir = contract.CertsDir
		volumes = append(volumes, corev1.Volume{Name: "cdi-cert-vol", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: certs}}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "cdi-cert-vol", MountPath: contract.CertsDir, ReadOnly: true})
	}
	if secret != "" {
		ref := func(key string) *corev1.EnvVarSource {
			return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}
		}
		c.Env = append(c.Env,
			corev1.EnvVar{Name: contract.EnvAccessKeyID, ValueFrom: ref(contract.SecretKeyAccessKeyID)},
			corev1.EnvVar{Name: contract.EnvSecretKey, ValueFrom: ref(contract.SecretKeySecretKey)})
	}
	return volumes
}
