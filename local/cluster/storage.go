package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/local/csidriver"
)

// virt-local's storage: its CSI driver (local/csidriver) in this process,
// and the upstream Kubernetes storage components that call it as
// processes: external-provisioner, external-resizer, external-snapshotter's
// csi-snapshotter and snapshot-controller (built by `make csi-bins`).
const (
	// StorageClassName is virt-local's default StorageClass: claims of it
	// get a folder of the CSI driver's.
	StorageClassName = "local"
	// VolumeSnapshotClassName is virt-local's default VolumeSnapshotClass.
	VolumeSnapshotClassName = "local"
	// csiTimeout bounds one call of a sidecar to the driver; a copy of a
	// large volume (a snapshot, a clone) takes a while.
	csiTimeout = "5m"
	// retryIntervalStart is the sidecars' first pause before a retry.
	retryIntervalStart = "100ms"
)

// storageProcesses are the storage components virt-local runs as
// processes, by name: binary and arguments past --kubeconfig.
func (c Config) storageProcesses() map[string][]string {
	csiAddr := "--csi-address=" + c.CSISocket()
	// Their retries (after a write conflict, or a driver call that timed
	// out) start after 100 ms rather than a second.
	retry := "--retry-interval-start=" + retryIntervalStart
	// Their default client rate (5 requests a second) throttles a few
	// snapshots in a row to a second each; virt-local's components
	// allow far more.
	qps, burst := "--kube-api-qps=50", "--kube-api-burst=100"
	return map[string][]string{
		"csi-provisioner":     {csiAddr, "--leader-election=false", "--extra-create-metadata", "--timeout=" + csiTimeout, retry, qps, burst},
		"csi-resizer":         {csiAddr, "--leader-election=false", "--timeout=" + csiTimeout, retry, qps, burst},
		"csi-snapshotter":     {csiAddr, "--leader-election=false", "--extra-create-metadata", "--timeout=" + csiTimeout, retry, qps, burst},
		"snapshot-controller": {"--leader-election=false", retry, qps, burst},
	}
}

// CSIDir holds the CSI driver's volumes and snapshots (DataDir/csi).
func (c Config) CSIDir() string { return filepath.Join(c.DataDir, "csi") }

// CSISocket is the CSI driver's socket.
func (c Config) CSISocket() string { return filepath.Join(c.DataDir, "csi.sock") }

// VolumeDir held the folders of the provisioner earlier virt-locals ran
// in place of the CSI driver; their hostPath volumes still mount.
func (c Config) VolumeDir() string { return filepath.Join(c.DataDir, "volumes") }

// storage is virt-local's running storage.
type storage struct {
	cfg     Config
	run     context.Context
	cancel  context.CancelFunc
	served  chan error
	sidecar *daemons
	// registrations are the kubelets the driver registered with, each
	// serving until run ends.
	registrations sync.WaitGroup
}

// startStorage installs the VolumeSnapshot CRDs, the CSIDriver and the
// default StorageClass and VolumeSnapshotClass, starts the CSI driver and
// then the sidecars and the snapshot controller.
func (c *Cluster) startStorage(ctx context.Context, cl client.Client) (*storage, error) {
	crds, err := deploy.VolumeSnapshotCRDs()
	if err != nil {
		return nil, err
	}
	objs := make([]client.Object, 0, len(crds)+3)
	for _, crd := range crds {
		objs = append(objs, crd)
	}
	if err := deploy.Apply(ctx, cl, objs...); err != nil {
		return nil, fmt.Errorf("cluster: VolumeSnapshot CRDs: %w", err)
	}
	wait, cancelWait := context.WithTimeout(ctx, time.Minute)
	defer cancelWait()
	if err := deploy.WaitEstablished(wait, cl, crds); err != nil {
		return nil, fmt.Errorf("cluster: VolumeSnapshot CRDs: %w", err)
	}
	if err := deploy.Apply(ctx, cl, csidriver.CSIDriver(), csidriver.StorageClass(StorageClassName, true),
		csidriver.VolumeSnapshotClass(VolumeSnapshotClassName, true)); err != nil {
		return nil, fmt.Errorf("cluster: storage classes: %w", err)
	}

	d, err := csidriver.New(c.cfg.CSIDir(), c.cfg.storageNodeID(), csidriver.WithLogger(c.cfg.Logger.WithName("csi-driver")))
	if err != nil {
		return nil, err
	}
	lis, err := csidriver.Listen(c.cfg.CSISocket())
	if err != nil {
		return nil, err
	}
	run, cancel := context.WithCancel(context.Background())
	s := &storage{cfg: c.cfg, run: run, cancel: cancel, served: make(chan error, 1), sidecar: newDaemons()}
	as(ComponentStorage, func() { go func() { s.served <- d.Serve(run, lis) }() })
	for name, args := range c.cfg.storageProcesses() {
		if _, err := c.startProcess(s.sidecar, name, name, args...); err != nil {
			return s, errors.Join(err, s.stop())
		}
	}
	return s, nil
}

// storageNodeID is the CSI node ID of every node of the machine: one
// driver serves them all.
func (c Config) storageNodeID() string { return "virt-local" }

// stop stops the sidecars, then the driver (calls under way finish).
func (s *storage) stop() error {
	if s == nil {
		return nil
	}
	errs := []error{s.sidecar.stopAll()}
	s.cancel()
	errs = append(errs, <-s.served)
	s.registrations.Wait()
	return errors.Join(errs...)
}

// registerWithKubelet registers the driver with the kubelet whose plugin
// registry folder is pluginsDir, until the storage stops: the kubelet then
// publishes the driver's volumes into its pods.
func (s *storage) registerWithKubelet(pluginsDir string) {
	log := s.cfg.Logger.WithName("csi-driver")
	s.registrations.Add(1)
	go func() {
		defer s.registrations.Done()
		if err := csidriver.ServeRegistration(s.run, pluginsDir, s.cfg.CSISocket(), log); err != nil {
			log.Error(err, "registration with the kubelet", "plugins", pluginsDir)
		}
	}()
}

// ClaimFolder is the host folder holding the data of a bound claim of
// virt-local's driver on the cluster whose data directory is dataDir (the
// folder a pod sees as the volume, disk.img in it for a VM's disk).
func ClaimFolder(ctx context.Context, r client.Reader, dataDir string, pvc *corev1.PersistentVolumeClaim) (string, error) {
	if pvc.Spec.VolumeName == "" {
		return "", fmt.Errorf("cluster: claim %s/%s is not bound", pvc.Namespace, pvc.Name)
	}
	var pv corev1.PersistentVolume
	if err := r.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, &pv); err != nil {
		return "", fmt.Errorf("cluster: claim %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != csidriver.Name {
		return "", fmt.Errorf("cluster: volume %s is not one of %s", pv.Name, csidriver.Name)
	}
	block := pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock
	return csidriver.VolumeData(Config{DataDir: dataDir}.CSIDir(), pv.Spec.CSI.VolumeHandle, block), nil
}
