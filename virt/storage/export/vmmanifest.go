package export

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	virtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
)

// CAConfigMapName is the ConfigMap of the CA in an export's VM manifests,
// which the DataVolumes they hold name as certConfigMap.
func CAConfigMapName(export string) string { return derived("export-ca-cm", export) }

// linkName is how a volume is named in status.links and matched to its
// VM's volumes: the backed-up claim's name, or the claim's.
func linkName(v Volume) string {
	if v.Name != "" {
		return v.Name
	}
	return v.Claim
}

// VMManifests are the manifests of an export of vm, for clients reaching
// the export at base (InternalBase or ExternalBase) trusting caPEM, as
// KubeVirt's export server writes them: the CA's ConfigMap; the VM (its
// status and server-set metadata dropped) whose dataVolumeTemplates of
// exported claims import from the export's gzip links with the export's
// auth-header Secret; and a DataVolume importing each other exported
// claim that a volume of the VM names (sizes gives each claim's size).
// Recreated from them, in another cluster, the VM has its disks back. An
// exported claim no volume names (the VM's backend storage) gets no
// DataVolume, as in KubeVirt's manifests: the recreated VM starts with
// new EFI variables and a new vTPM.
func VMManifests(export string, vm *virtv1.VirtualMachine, vols []Volume, sizes map[string]resource.Quantity, base, caPEM string) []runtime.Object {
	source := func(v Volume) *cdiv1.DataVolumeSource {
		return &cdiv1.DataVolumeSource{HTTP: &cdiv1.DataVolumeSourceHTTP{URL: base + GzipPath(v.Claim),
			CertConfigMap: CAConfigMapName(export), SecretExtraHeaders: []string{HeaderSecretName(export)}}}
	}
	ca := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: CAConfigMapName(export)}, Data: map[string]string{"ca.pem": caPEM}}
	out := &virtv1.VirtualMachine{TypeMeta: metav1.TypeMeta{APIVersion: virtv1.SchemeGroupVersion.String(), Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{Name: vm.Name, Namespace: vm.Namespace, Labels: vm.Labels, Annotations: vm.Annotations},
		Spec:       *vm.Spec.DeepCopy()}
	byName := map[string]Volume{}
	for _, v := range vols {
		byName[linkName(v)] = v
	}
	templated := map[string]bool{}
	for i := range out.Spec.DataVolumeTemplates {
		t := &out.Spec.DataVolumeTemplates[i]
		if v, ok := byName[t.Name]; ok {
			t.Spec.Source, t.Spec.SourceRef = source(v), nil
			templated[t.Name] = true
		}
	}
	disks := map[string]bool{}
	if vm.Spec.Template != nil {
		for _, v := range vm.Spec.Template.Spec.Volumes {
			switch {
			case v.PersistentVolumeClaim != nil:
				disks[v.PersistentVolumeClaim.ClaimName] = true
			case v.DataVolume != nil:
				disks[v.DataVolume.Name] = true
			}
		}
	}
	objs := []runtime.Object{ca, out}
	for _, v := range vols {
		name := linkName(v)
		if templated[name] || !disks[name] {
			continue
		}
		dv := &cdiv1.DataVolume{TypeMeta: metav1.TypeMeta{APIVersion: cdiv1.SchemeGroupVersion.String(), Kind: "DataVolume"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: cdiv1.DataVolumeSpec{Source: source(v), Storage: &cdiv1.StorageSpec{Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: sizes[v.Claim]}}}}}
		objs = append(objs, dv)
	}
	return objs
}
