package deploy

import (
	"fmt"
	"path"

	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clonev1 "kubevirt.io/api/clone/v1beta1"
	virtv1 "kubevirt.io/api/core/v1"
	exportv1 "kubevirt.io/api/export/v1beta1"
	apiinstancetype "kubevirt.io/api/instancetype"
	poolv1 "kubevirt.io/api/pool/v1beta1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Controller says how virt-controller runs on a cluster: a Deployment
// whose replicas elect a leader, as KubeVirt's virt-controller.
type Controller struct {
	// Namespace holds the Deployment, its ServiceAccount, the KubeVirt CR it
	// reads and its leader election Lease (required).
	Namespace string
	// Image is virt-controller's image (required).
	Image string
	// PullPolicy is the image's pull policy; empty is Kubernetes' default.
	PullPolicy corev1.PullPolicy
	// LauncherImage is the image of the launcher pods it creates (required).
	LauncherImage string
	// ImporterImage is the image of the DataVolume importer pods it
	// creates; empty: it runs no DataVolume controller.
	ImporterImage string
	// UploadClientCASecret names a Secret in Namespace whose ca.crt is the
	// CA of the upload proxy's client certificate (virt-api's client
	// Secret, API.HandlerClientSecret); only that key is mounted. Empty:
	// DataVolume uploads wait, unconfigured.
	UploadClientCASecret string
	// ExportServerImage is the image of the VirtualMachineExport server
	// pods it creates, and ExportCASecret names a kubernetes.io/tls Secret
	// in Namespace holding the export CA that signs their certificates
	// (mounted; a renewed CA is read again). Empty: no export controller.
	ExportServerImage, ExportCASecret string
	// Emulation runs guests under software emulation even when the
	// KubeVirt CR does not ask for it.
	Emulation bool
	// LauncherCapabilitiesCache is a node folder the launchers share for
	// libvirt's QEMU capability probe; empty: each launcher probes.
	LauncherCapabilitiesCache string
	// Replicas is the Deployment's size; default 2, one standing by for the
	// lease, with a PodDisruptionBudget that keeps one running.
	Replicas int32
	// MetricsPort and ProbePort are the ports it serves /metrics (plain
	// HTTP) and /healthz, /readyz on; defaults 8443 (KubeVirt's metrics
	// port) and 8081.
	MetricsPort, ProbePort int32
	// Placement limits the nodes it runs on; empty is every Linux node.
	Placement Placement
	// APIServer, "host:port", is where it reaches the apiserver on a cluster
	// whose pods cannot reach the kubernetes Service; it then takes the
	// host's network, as Handler.APIServer.
	APIServer string
}

// ControllerName names virt-controller's Deployment, ClusterRole and
// binding, and is the kubevirt.io label of its pods.
const ControllerName = "virt-controller"

func (c Controller) workload() workload {
	return workload{kind: "Controller", namespace: c.Namespace, image: c.Image, name: ControllerName, sa: ControllerServiceAccount,
		placement: c.Placement, apiServer: c.APIServer}
}

func (c Controller) withDefaults() (Controller, error) {
	errs := c.workload().check()
	if c.LauncherImage == "" {
		errs = append(errs, fmt.Errorf("deploy: Controller.LauncherImage: required"))
	}
	if (c.ExportServerImage == "") != (c.ExportCASecret == "") {
		errs = append(errs, fmt.Errorf("deploy: Controller.ExportServerImage %q and ExportCASecret %q: set both or neither", c.ExportServerImage, c.ExportCASecret))
	}
	if c.LauncherCapabilitiesCache != "" && !path.IsAbs(c.LauncherCapabilitiesCache) {
		errs = append(errs, fmt.Errorf("deploy: Controller.LauncherCapabilitiesCache %q: must be absolute", c.LauncherCapabilitiesCache))
	}
	errs = append(errs, checkReplicas("Controller", &c.Replicas)...)
	errs = append(errs, checkPorts("Controller", port{"MetricsPort", &c.MetricsPort, 8443}, port{"ProbePort", &c.ProbePort, 8081})...)
	return c, joinErrs(errs)
}

// ControllerObjects returns virt-controller's ServiceAccount, its
// ClusterRole and binding, a Role and binding for its leader election
// Lease in Namespace, its Deployment and, with more than one replica, a
// PodDisruptionBudget.
//
// The pod runs as a non-root user without capabilities on a read-only
// root file system.
func ControllerObjects(c Controller) ([]client.Object, error) {
	c, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	w := c.workload()
	lease := &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: w.meta(true),
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}
	leaseBinding := w.roleBinding(c.Namespace, ControllerName, ControllerName)
	objs := append(w.identity(controllerRules()), lease, leaseBinding, w.deployment(c.Replicas, controllerPod(c)))
	if pdb := w.disruptionBudget(c.Replicas); pdb != nil {
		objs = append(objs, pdb)
	}
	return objs, nil
}

// controllerRules is what virt-controller does with the API: it turns pools
// into VMs, VMs and replica sets into VMIs and VMIs into launcher pods,
// fills DataVolumes, runs migrations (target pods,
// evictions of sources, copies of ReadWriteOnce claims), freezes guests for
// online snapshots, reads the claims,
// Nodes and the KubeVirt CR the pods depend on, writes the count of outdated VMIs to the CR's status,
// and records events.
func controllerRules() []rbacv1.PolicyRule {
	kv := virtv1.SchemeGroupVersion.Group
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	read := []string{"get", "list", "watch"}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{kv}, Resources: []string{"virtualmachines", "virtualmachineinstances", "virtualmachineinstancemigrations"}, Verbs: all},
		{APIGroups: []string{kv}, Resources: []string{"virtualmachines/status", "virtualmachineinstances/status", "virtualmachineinstancemigrations/status",
			"virtualmachines/finalizers", "virtualmachineinstances/finalizers", "virtualmachineinstancemigrations/finalizers"}, Verbs: []string{"update", "patch"}},
		// Online snapshots freeze and thaw the guest's file systems through
		// virt-api, as KubeVirt's snapshot controller does.
		{APIGroups: []string{virtv1.SubresourceGroupName}, Resources: []string{"virtualmachineinstances/freeze", "virtualmachineinstances/unfreeze"},
			Verbs: []string{"update"}},
		// Replica sets: read, their status written; their finalizers
		// subresource lets it set blockOwnerDeletion on the VMIs they own.
		{APIGroups: []string{kv}, Resources: []string{"virtualmachineinstancereplicasets"}, Verbs: read},
		{APIGroups: []string{kv}, Resources: []string{"virtualmachineinstancereplicasets/status", "virtualmachineinstancereplicasets/finalizers"},
			Verbs: []string{"update", "patch"}},
		// Pools: their finalizer, their status, and blockOwnerDeletion on
		// the VMs and revisions they own.
		{APIGroups: []string{poolv1.SchemeGroupVersion.Group}, Resources: []string{"virtualmachinepools"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
		{APIGroups: []string{poolv1.SchemeGroupVersion.Group}, Resources: []string{"virtualmachinepools/status", "virtualmachinepools/finalizers"},
			Verbs: []string{"update", "patch"}},
		// DataVolumes: filled through importer pods and claims they
		// control; made from VMs' dataVolumeTemplates.
		{APIGroups: []string{cdiv1.SchemeGroupVersion.Group}, Resources: []string{"datavolumes"}, Verbs: all},
		{APIGroups: []string{cdiv1.SchemeGroupVersion.Group}, Resources: []string{"datavolumes/status", "datavolumes/finalizers"}, Verbs: []string{"update", "patch"}},
		// Upload pods' Secrets: their serving key, made and deleted with
		// the pod, read back (uncached) only when an earlier attempt left
		// one.
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "create", "delete"}},
		// The CDIConfig "config": made if missing, its status written (the
		// CRD has no status subresource), its spec set from the CDI
		// resource's; read for the file system overhead.
		{APIGroups: []string{cdiv1.SchemeGroupVersion.Group}, Resources: []string{"cdiconfigs"}, Verbs: []string{"get", "list", "watch", "create", "update"}},
		// The CDI resource: made if missing, its configuration authority
		// taken and its status written (no status subresource either);
		// read for its clone strategy override.
		{APIGroups: []string{cdiv1.SchemeGroupVersion.Group}, Resources: []string{"cdis"}, Verbs: []string{"get", "list", "watch", "create", "update"}},
		// StorageProfiles: one per StorageClass, owned by it, its status
		// written; read for DataVolumes' claim defaults.
		{APIGroups: []string{cdiv1.SchemeGroupVersion.Group}, Resources: []string{"storageprofiles"}, Verbs: []string{"get", "list", "watch", "create"}},
		{APIGroups: []string{cdiv1.SchemeGroupVersion.Group}, Resources: []string{"storageprofiles/status"}, Verbs: []string{"update", "patch"}},
		{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"storageclasses"}, Verbs: read},
		// DataSources: read for sourceRefs, their Ready condition written.
		{APIGroups: []string{cdiv1.SchemeGroupVersion.Group}, Resources: []string{"datasources"}, Verbs: read},
		{APIGroups: []string{cdiv1.SchemeGroupVersion.Group}, Resources: []string{"datasources/status"}, Verbs: []string{"update", "patch"}},
		{APIGroups: []string{kv}, Resources: []string{"kubevirts"}, Verbs: read},
		{APIGroups: []string{kv}, Resources: []string{"kubevirts/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}},
		// Claims: read for the pods; a migration copies ReadWriteOnce ones.
		{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: all},
		// A CSI clone into another namespace hands its volume over to the
		// DataVolume's claim (read uncached, its claimRef updated).
		{APIGroups: []string{""}, Resources: []string{"persistentvolumes"}, Verbs: []string{"get", "update"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: read},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"patch"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
		// A VM's instancetype and preference, read at its first start and
		// kept in a ControllerRevision the VM owns.
		readInstancetypes(),
		// A pool's revisions: kept, read back and pruned.
		{APIGroups: []string{"apps"}, Resources: []string{"controllerrevisions"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
		// VM snapshots and restores: their contents made, their statuses
		// written, a CSI VolumeSnapshot per claim of the VM.
		{APIGroups: []string{vmsnapshotv1.SchemeGroupVersion.Group}, Resources: []string{"virtualmachinesnapshots", "virtualmachinesnapshotcontents", "virtualmachinerestores"}, Verbs: all},
		{APIGroups: []string{vmsnapshotv1.SchemeGroupVersion.Group}, Resources: []string{"virtualmachinesnapshots/status", "virtualmachinesnapshotcontents/status", "virtualmachinerestores/status"},
			Verbs: []string{"update", "patch"}},
		{APIGroups: []string{volumesnapshotv1.GroupName}, Resources: []string{"volumesnapshots"}, Verbs: all},
		{APIGroups: []string{volumesnapshotv1.GroupName}, Resources: []string{"volumesnapshotclasses"}, Verbs: read},
		// VM clones: read, their statuses written, deleted with their
		// target VM (the snapshots and restores they make are above).
		{APIGroups: []string{clonev1.SchemeGroupVersion.Group}, Resources: []string{"virtualmachineclones"}, Verbs: []string{"get", "list", "watch", "delete"}},
		{APIGroups: []string{clonev1.SchemeGroupVersion.Group}, Resources: []string{"virtualmachineclones/status"}, Verbs: []string{"update", "patch"}},
		// VM exports: read, deleted when their TTL passes, their statuses
		// written; each gets a Service, a token and a certificate Secret
		// (updated when renewed; read uncached, as above) and a server pod.
		{APIGroups: []string{exportv1.SchemeGroupVersion.Group}, Resources: []string{"virtualmachineexports"}, Verbs: []string{"get", "list", "watch", "delete"}},
		{APIGroups: []string{exportv1.SchemeGroupVersion.Group}, Resources: []string{"virtualmachineexports/status"}, Verbs: []string{"update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "list", "watch", "create"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"update"}},
		// External links through an Ingress to the export proxy in the
		// install namespace (its TLS Secret is read with the get above).
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: read},
		// Its VM manifests' ConfigMap, read uncached; the import proxy's
		// CAs (the CDIConfig's trustedCAProxy), read uncached in the
		// install namespace and copied for an importer pod, deleted with it.
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create", "update", "delete"}},
	}
}

// controllerPod is virt-controller's pod.
func controllerPod(c Controller) corev1.PodSpec {
	args := []string{
		"--namespace=" + c.Namespace,
		"--launcher-image=" + c.LauncherImage,
		"--leader-elect=true",
		"--metrics-bind-address=" + listen(c.MetricsPort),
		"--health-probe-bind-address=" + listen(c.ProbePort),
	}
	if c.ImporterImage != "" {
		args = append(args, "--importer-image="+c.ImporterImage)
	}
	if c.Emulation {
		args = append(args, "--emulation")
	}
	if c.LauncherCapabilitiesCache != "" {
		args = append(args, "--launcher-capabilities-cache="+c.LauncherCapabilitiesCache)
	}
	if c.UploadClientCASecret != "" {
		args = append(args, "--upload-client-ca-file="+path.Join(controllerUploadCADir, corev1.ServiceAccountRootCAKey))
	}
	if c.ExportServerImage != "" {
		args = append(args, "--export-server-image="+c.ExportServerImage,
			"--export-ca-cert-file="+path.Join(controllerExportCADir, corev1.TLSCertKey),
			"--export-ca-key-file="+path.Join(controllerExportCADir, corev1.TLSPrivateKeyKey))
	}
	pod := c.workload().managerPod(c.PullPolicy, args, c.ProbePort, nil,
		metricsPort(c.MetricsPort))
	if c.UploadClientCASecret != "" {
		// The CA only: the Secret's key is virt-api's.
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "upload-client-ca", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: c.UploadClientCASecret, Items: []corev1.KeyToPath{{Key: corev1.ServiceAccountRootCAKey, Path: corev1.ServiceAccountRootCAKey}}}}})
		pod.Containers[0].VolumeMounts = append(pod.Containers[0].VolumeMounts,
			corev1.VolumeMount{Name: "upload-client-ca", MountPath: controllerUploadCADir, ReadOnly: true})
	}
	if c.ExportCASecret != "" {
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "export-ca", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: c.ExportCASecret, Items: []corev1.KeyToPath{{Key: corev1.TLSCertKey, Path: corev1.TLSCertKey}, {Key: corev1.TLSPrivateKeyKey, Path: corev1.TLSPrivateKeyKey}}}}})
		pod.Containers[0].VolumeMounts = append(pod.Containers[0].VolumeMounts,
			corev1.VolumeMount{Name: "export-ca", MountPath: controllerExportCADir, ReadOnly: true})
	}
	return pod
}

// controllerUploadCADir and controllerExportCADir are where
// virt-controller finds the upload proxy's client CA and the export CA.
const (
	controllerUploadCADir = "/etc/virtkit/upload-client-ca"
	controllerExportCADir = "/etc/virtkit/export-ca"
)

// readInstancetypes lets virt-controller and virt-api read the instancetypes
// and preferences VMs name, namespaced and cluster-wide.
func readInstancetypes() rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{apiinstancetype.GroupName}, Verbs: []string{"get"},
		Resources: []string{apiinstancetype.PluralResourceName, apiinstancetype.ClusterPluralResourceName,
			apiinstancetype.PluralPreferenceResourceName, apiinstancetype.ClusterPluralPreferenceResourceName}}
}
