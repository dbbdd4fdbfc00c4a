package operator

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/virt/clusterconfig"
	"github.com/virtkit/virtkit/virt/migrate"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
)

// Labels and annotations the operator puts on everything it makes,
// KubeVirt's: the managed-by label finds them again (to revert drift and
// to uninstall); the annotations say which version and registry made them.
const (
	ManagedByLabel     = "app.kubernetes.io/managed-by"
	ManagedByValue     = "virt-operator"
	ComponentLabel     = "app.kubernetes.io/component"
	ComponentValue     = "kubevirt"
	VersionAnnotation  = "kubevirt.io/install-strategy-version"
	RegistryAnnotation = "kubevirt.io/install-strategy-registry"
	kubeVirtCRDName    = "kubevirts.kubevirt.io"
	virtAPIServicePort = 443
	virtAPIListenPort  = 8443
	// hostNetworkControllerMetricsPort is virt-controller's /metrics port
	// when the daemons share a node's network (Settings.APIServer): its
	// default, 8443, is virt-api's.
	hostNetworkControllerMetricsPort = 8191
	// hostNetworkExportProxyPort is the export proxy's port on a node's
	// network: its default, 8443, is virt-api's too.
	hostNetworkExportProxyPort = 8192
)

// The daemons' image names: Target.Image(name) is a daemon's image.
const (
	ImageAPI          = "virt-api"
	ImageController   = "virt-controller"
	ImageHandler      = "virt-handler"
	ImageLauncher     = "virt-launcher"
	ImageImporter     = "virt-importer"
	ImageExportServer = "virt-exportserver"
	ImageExportProxy  = "virt-exportproxy"
)

// HandlerServerName is the name in every handler's serving certificate,
// which virt-api checks whatever address it dials (nodeapi.ServerName).
func HandlerServerName(namespace string) string { return nodeapi.ServerName(namespace) }

// Components returns every object of an installation for kv, in the
// order they are applied: the CRDs, what makes the apiserver call
// virt-api (its Service, the APIService, the webhooks, the subresource
// roles), then each daemon's identity and workload, the metrics Service
// that finds the daemons' /metrics endpoints, and what makes the apiserver
// call the operator's own [Webhook]. caBundle is the PEM of the CAs whose
// certificates virt-api and the operator serve with. It is pure: the same
// inputs give the same objects. The Secrets are not among them
// (see [Certificates]); nor is the KubeVirt CRD, which the operator's
// own manifest installs and uninstalling keeps.
func Components(kv *virtv1.KubeVirt, s Settings, caBundle []byte) ([]client.Object, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	t := TargetOf(kv, s)
	ns := s.Namespace
	replicas := s.Replicas
	var infra, workloads deploy.Placement
	if kv.Spec.Infra != nil {
		if kv.Spec.Infra.Replicas != nil {
			replicas = int32(*kv.Spec.Infra.Replicas)
		}
		infra = deploy.PlacementOf(kv.Spec.Infra.NodePlacement)
	}
	if kv.Spec.Workloads != nil {
		workloads = deploy.PlacementOf(kv.Spec.Workloads.NodePlacement)
	}

	crds, err := deploy.CRDs()
	if err != nil {
		return nil, err
	}
	var objs []client.Object
	for _, crd := range crds {
		if crd.Name != kubeVirtCRDName {
			objs = append(objs, crd)
		}
	}
	api, err := deploy.VirtAPIObjects(deploy.VirtAPI{Namespace: ns, Service: deploy.APIName,
		Port: virtAPIServicePort, TargetPort: virtAPIListenPort, CABundle: caBundle})
	if err != nil {
		return nil, err
	}
	for _, o := range api {
		if _, ok := o.(*corev1.Namespace); !ok { // the operator's own, which the CR lives in
			objs = append(objs, o)
		}
	}
	apiPods, err := deploy.APIObjects(deploy.API{Namespace: ns, Image: t.Image(ImageAPI), PullPolicy: t.PullPolicy,
		Service: deploy.APIName, TLSSecret: SecretVirtAPI, HandlerClientSecret: SecretHandlerClient,
		HandlerServerName: HandlerServerName(ns), Replicas: replicas, Port: virtAPIListenPort, APIServer: s.APIServer, Placement: infra})
	if err != nil {
		return nil, err
	}
	var controllerMetrics int32
	if s.APIServer != "" {
		controllerMetrics = hostNetworkControllerMetricsPort
	}
	controller, err := deploy.ControllerObjects(deploy.Controller{Namespace: ns, Image: t.Image(ImageController),
		// No Emulation flag: virt-controller reads useEmulation from the CR
		// at each launcher pod, so a change needs no rollout.
		PullPolicy: t.PullPolicy, LauncherImage: t.Image(ImageLauncher), ImporterImage: t.Image(ImageImporter), MetricsPort: controllerMetrics,
		UploadClientCASecret: SecretHandlerClient,
		ExportServerImage:    t.Image(ImageExportServer), ExportCASecret: SecretExportCA,
		LauncherCapabilitiesCache: s.LauncherCapabilitiesCache, Replicas: replicas, APIServer: s.APIServer, Placement: infra})
	if err != nil {
		return nil, err
	}
	var proxyPort int32
	if s.APIServer != "" {
		proxyPort = hostNetworkExportProxyPort
	}
	exportProxy, err := deploy.ExportProxyObjects(deploy.ExportProxy{Namespace: ns, Image: t.Image(ImageExportProxy), PullPolicy: t.PullPolicy,
		TLSSecret: SecretExportProxy, ExportCASecret: SecretExportCA, Replicas: replicas, Port: proxyPort, APIServer: s.APIServer, Placement: infra})
	if err != nil {
		return nil, err
	}
	// The CR's useEmulation is not passed on: the handler reads it at each
	// guest's start, so a change rolls no pod. Its migration network is:
	// the handlers' pods join it when they start, as KubeVirt's do.
	migrations, err := migrate.ClusterConfig(clusterconfig.Migrations(kv))
	if err != nil {
		return nil, err
	}
	handler, err := deploy.HandlerObjects(deploy.Handler{Namespace: ns, Image: t.Image(ImageHandler), PullPolicy: t.PullPolicy,
		TLSSecret: SecretHandlerServer, Emulation: s.Emulation, LauncherImage: t.Image(ImageLauncher), APIServer: s.APIServer,
		PodsDir: s.KubeletPodsDir, StateDir: s.HandlerStateDir, Placement: workloads, MigrationNetwork: migrations.Network,
		// Each handler asks for its node's migration certificate, which
		// the operator's signer (operator/signer) grants.
		MigrationCA: &deploy.ConfigMapKey{Name: ConfigMapCA, Key: CABundleKey}})
	if err != nil {
		return nil, err
	}
	metrics, err := deploy.MetricsObjects(ns)
	if err != nil {
		return nil, err
	}
	objs = append(append(append(append(append(append(objs, apiPods...), controller...), exportProxy...), handler...), metrics...), webhookObjects(s, caBundle)...)
	for _, o := range objs {
		mark(o, t)
	}
	return objs, nil
}

// mark labels and annotates o as the operator's, for target t.
func mark(o client.Object, t Target) {
	labels := o.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[ManagedByLabel] = ManagedByValue
	labels[ComponentLabel] = ComponentValue
	o.SetLabels(labels)
	ann := o.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[VersionAnnotation] = t.Tag
	ann[RegistryAnnotation] = t.Registry
	o.SetAnnotations(ann)
}

// describe names o for errors and logs: Kind namespace/name.
func describe(o client.Object) string {
	return fmt.Sprintf("%s %s", o.GetObjectKind().GroupVersionKind().Kind, client.ObjectKeyFromObject(o))
}
