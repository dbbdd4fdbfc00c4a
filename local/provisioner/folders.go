package provisioner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

// Name is the provisioner name of [StorageClass] and of volumes [Folders] makes.
const Name = "virtkit.io/local-folder"

// FolderAnnotation records, on a volume [Folders] made, the folder behind it.
const FolderAnnotation = "virtkit.io/local-folder"

// Folders provisions each claim as a folder Root/<volume name>, shown to
// Kubernetes as a hostPath PersistentVolume.
type Folders struct {
	// Root holds the folders; it is created when missing.
	Root string
	// Log receives one line per folder made or removed.
	Log logr.Logger
}

var (
	_ controller.Provisioner      = (*Folders)(nil)
	_ controller.BlockProvisioner = (*Folders)(nil)
)

// SupportsBlock implements controller.BlockProvisioner. It says yes so that
// Block claims reach Provision, which refuses them naming the claim's field
// (the controller's own refusal names no field).
func (f *Folders) SupportsBlock(context.Context) bool { return true }

// Provision implements controller.Provisioner.
func (f *Folders) Provision(_ context.Context, opts controller.ProvisionOptions) (*corev1.PersistentVolume, controller.ProvisioningState, error) {
	pvc := opts.PVC
	if err := check(opts); err != nil {
		return nil, controller.ProvisioningFinished, fmt.Errorf("claim %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	dir, err := f.folder(opts.PVName)
	if err != nil {
		return nil, controller.ProvisioningFinished, err
	}
	// 0777: the folder is the volume's root, written by whatever user the
	// pod runs as (virt-launcher's qemu is uid 107 in KubeVirt's images).
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, controller.ProvisioningFinished, fmt.Errorf("claim %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		return nil, controller.ProvisioningFinished, fmt.Errorf("claim %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if rp := opts.StorageClass.ReclaimPolicy; rp != nil {
		reclaim = *rp
	}
	fs := corev1.PersistentVolumeFilesystem
	dirType := corev1.HostPathDirectory
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        opts.PVName,
			Annotations: map[string]string{FolderAnnotation: dir},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   pvc.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: reclaim,
			VolumeMode:                    &fs,
			MountOptions:                  opts.StorageClass.MountOptions,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &dirType},
			},
		},
	}
	f.Log.Info("provisioned", "claim", pvc.Namespace+"/"+pvc.Name, "volume", opts.PVName, "folder", dir)
	return pv, controller.ProvisioningFinished, nil
}

// Delete implements controller.Provisioner: it removes the folder of a
// volume it made. A volume whose folder is not directly under Root is not
// its own and is ignored.
func (f *Folders) Delete(_ context.Context, pv *corev1.PersistentVolume) error {
	dir := pv.Annotations[FolderAnnotation]
	want, err := f.folder(pv.Name)
	if err != nil || dir != want || pv.Spec.HostPath == nil || pv.Spec.HostPath.Path != dir {
		return &controller.IgnoredError{Reason: fmt.Sprintf("volume %s: not a folder under %s made by %s", pv.Name, f.Root, Name)}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("volume %s: %w", pv.Name, err)
	}
	f.Log.Info("deleted", "volume", pv.Name, "folder", dir)
	return nil
}

// folder is the folder of a volume, refusing names that would leave Root.
func (f *Folders) folder(volume string) (string, error) {
	if f.Root == "" || !filepath.IsAbs(f.Root) {
		return "", fmt.Errorf("provisioner: root %q is not an absolute path", f.Root)
	}
	if volume == "" || volume == "." || volume == ".." || filepath.Base(volume) != volume {
		return "", fmt.Errorf("provisioner: volume name %q cannot name a folder", volume)
	}
	return filepath.Join(f.Root, volume), nil
}

// errRefused marks a claim the provisioner cannot serve.
var errRefused = errors.New("not supported by " + Name)

// check refuses what a folder cannot be, naming the claim's or class's field.
func check(opts controller.ProvisionOptions) error {
	spec := opts.PVC.Spec
	switch {
	case spec.VolumeMode != nil && *spec.VolumeMode == corev1.PersistentVolumeBlock:
		return fmt.Errorf("spec.volumeMode: Block is %w (folders are file systems)", errRefused)
	case spec.Selector != nil:
		return fmt.Errorf("spec.selector: a label selector is %w (volumes are made for the claim)", errRefused)
	case spec.DataSource != nil || spec.DataSourceRef != nil:
		return fmt.Errorf("spec.dataSource: cloning and snapshots are %w", errRefused)
	}
	if q, ok := spec.Resources.Requests[corev1.ResourceStorage]; !ok || q.Sign() <= 0 {
		return errors.New("spec.resources.requests.storage: a positive size is required")
	}
	for _, m := range spec.AccessModes {
		if !slices.Contains([]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod}, m) {
			return fmt.Errorf("spec.accessModes: unknown access mode %q", m)
		}
	}
	for k := range opts.StorageClass.Parameters {
		return fmt.Errorf("storageClass %s: parameters.%s: %w (it takes no parameters)", opts.StorageClass.Name, k, errRefused)
	}
	return nil
}
