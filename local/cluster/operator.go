package cluster

import (
	"context"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/operator"
)

// upForOperator finishes Up with Config.Operator: the storage and the
// real node, the images in the registry, and the two manifests that
// install virtkit there. Nothing of virtkit is installed.
func (c *Cluster) upForOperator(ctx context.Context, cl client.Client) error {
	cfg := c.cfg
	log := cfg.Logger
	if err := waitDefaultServiceAccount(ctx, cl); err != nil {
		return err
	}
	if err := prepareCapabilitiesCache(cfg.CapabilitiesCacheDir()); err != nil {
		return err
	}
	log.Info("starting the CSI driver and the storage components", "class", StorageClassName, "snapshotClass", VolumeSnapshotClassName, "folders", cfg.CSIDir(), "logs", cfg.DaemonLogDir())
	var err error
	if c.storage, err = c.startStorage(ctx, cl); err != nil {
		return err
	}
	if err := c.addGuestMetrics(); err != nil {
		return err
	}
	if c.real, err = c.startKubeletNode(ctx, newNetworks(cfg.DataDir)); err != nil {
		return err
	}
	if err := c.PushImages(ctx, ImageTag); err != nil {
		return err
	}
	objs, kv, err := c.OperatorManifests()
	if err != nil {
		return err
	}
	paths, err := deploy.WriteRelease(cfg.OperatorManifestDir(), objs, kv)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if err := c.serveMetrics(); err != nil {
		return err
	}
	log.Info("up; virtkit is not installed: apply the operator's manifest, then the KubeVirt CR",
		"kubeconfig", c.Kubeconfig(), "operator", paths[0], "cr", paths[1],
		"registry", c.Registry(), "kubeletNode", cfg.KubeletNode)
	return nil
}

// OperatorManifests are the release manifest for this cluster
// (deploy.OperatorObjects: the operator's image in the cluster's registry,
// the apiserver's address for the real node's pods, which take the host's
// network, and the real node's folders) and a KubeVirt CR asking for
// software emulation, one replica of virt-api and virt-controller (one
// node's network holds one of each) and an uninstall blocked while
// workloads exist.
func (c *Cluster) OperatorManifests() ([]client.Object, *virtv1.KubeVirt, error) {
	apiserver, err := c.apiServerHostPort()
	if err != nil {
		return nil, nil, err
	}
	objs, err := deploy.OperatorObjects(deploy.Operator{Namespace: Namespace,
		Image:      c.Registry() + "/virtkit/" + deploy.OperatorName + ":" + ImageTag,
		PullPolicy: corev1.PullAlways, Replicas: 1, APIServer: apiserver,
		// The records stay in the data directory, as the local nodes'
		// handlers' do, not in the host's /var/run.
		LauncherCapabilitiesCache: c.cfg.CapabilitiesCacheDir(), KubeletPodsDir: c.cfg.PodsDir(c.cfg.KubeletNode),
		HandlerStateDir: filepath.Join(c.cfg.DataDir, "handlers", c.cfg.KubeletNode),
		// This machine's /dev/kvm may be unusable: emulation is the node's
		// setting, never a probe, and no change of the CR turns KVM on.
		Emulation: true})
	if err != nil {
		return nil, nil, err
	}
	one := uint8(1)
	kv := &virtv1.KubeVirt{TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "KubeVirt"},
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "kubevirt"},
		Spec: virtv1.KubeVirtSpec{ImagePullPolicy: corev1.PullAlways, Infra: &virtv1.ComponentConfig{Replicas: &one},
			UninstallStrategy: virtv1.KubeVirtUninstallStrategyBlockUninstallIfWorkloadsExist,
			Configuration: virtv1.KubeVirtConfiguration{
				// This machine may have no usable /dev/kvm; emulation is chosen, never probed.
				DeveloperConfiguration: &virtv1.DeveloperConfiguration{UseEmulation: true}}}}
	return objs, kv, nil
}

// PushImages pushes the images the operator installs from (virt-operator,
// virt-api, virt-controller, virt-exportproxy, virt-handler, and the
// launcher, importer and export server pods' images) to the cluster's
// registry as REGISTRY/virtkit/NAME:tag, from ImagesDir's NAME:ImageTag.
// Up pushes them as ImageTag; under another tag they are a version to
// upgrade to (spec.imageTag of the KubeVirt CR).
func (c *Cluster) PushImages(ctx context.Context, tag string) error {
	for _, name := range []string{deploy.OperatorName, deploy.APIName, deploy.ControllerName, deploy.HandlerName, operator.ImageLauncher,
		operator.ImageImporter, operator.ImageExportServer, operator.ImageExportProxy} {
		if _, err := c.pushBuiltAs(ctx, name, tag); err != nil {
			return err
		}
	}
	return nil
}
