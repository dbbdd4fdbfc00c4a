package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// hostVolume is a pod volume as a host file or folder.
type hostVolume struct {
	path     string
	readOnly bool
}

// prepareVolumes gives each of the pod's volumes a host path: hostPath
// volumes their path, emptyDir a folder of the pod's, configMap, secret,
// downwardAPI and projected volumes a folder of files written from the API,
// PVCs their bound PersistentVolume's hostPath or local path, and image
// volumes the ImageStore's folder. Written volumes are rewritten on each
// attempt.
func (r *podRun) prepareVolumes(ctx context.Context) error {
	pod := r.snapshot()
	vols := map[string]hostVolume{}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		hv, err := r.prepareVolume(ctx, pod, v)
		if err != nil {
			var se *setupError
			if errors.As(err, &se) {
				se.err = fmt.Errorf("volume %q: %w", v.Name, se.err)
				return se
			}
			return fmt.Errorf("volume %q: %w", v.Name, err)
		}
		vols[v.Name] = hv
	}
	r.mu.Lock()
	r.vols = vols
	r.mu.Unlock()
	return nil
}

func (r *podRun) volumeDir(name string) string { return filepath.Join(r.dir, "volumes", name) }

func (r *podRun) prepareVolume(ctx context.Context, pod *corev1.Pod, v *corev1.Volume) (hostVolume, error) {
	src := v.VolumeSource
	switch {
	case src.HostPath != nil:
		return hostVolume{path: src.HostPath.Path}, checkHostPath(src.HostPath)
	case src.EmptyDir != nil:
		// Where a kubelet keeps it, so that a node daemon finds a pod's
		// emptyDir by the pod's UID as on any node.
		dir := contract.EmptyDir(r.p.cfg.PodsDir(), r.uid, v.Name)
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return hostVolume{}, err
		}
		// With an fsGroup, as a kubelet sets a volume's ownership: the
		// group's, and what is made in it too (set-group-ID).
		mode := os.FileMode(0o777)
		if sc := pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
			if err := os.Lchown(dir, -1, int(*sc.FSGroup)); err != nil {
				return hostVolume{}, err
			}
			mode |= os.ModeSetgid
		}
		return hostVolume{path: dir}, os.Chmod(dir, mode)
	case src.ConfigMap != nil, src.Secret != nil, src.DownwardAPI != nil, src.Projected != nil:
		files, err := r.volumeFiles(ctx, pod, src)
		if err != nil {
			return hostVolume{}, err
		}
		dir := r.volumeDir(v.Name)
		if err := writeFiles(dir, files); err != nil {
			return hostVolume{}, err
		}
		return hostVolume{path: dir, readOnly: true}, nil
	case src.PersistentVolumeClaim != nil:
		ro := src.PersistentVolumeClaim.ReadOnly
		path, err := r.claimPath(ctx, pod.Namespace, src.PersistentVolumeClaim.ClaimName, ro)
		return hostVolume{path: path, readOnly: ro}, err
	case src.Image != nil:
		dir, err := r.p.opts.images.Mount(ctx, src.Image.Reference)
		if err != nil {
			reason := "ContainerCreating"
			if errors.Is(err, ErrImageNotFound) {
				reason = "ErrImagePull"
			}
			return hostVolume{}, &setupError{reason: reason, err: fmt.Errorf("image %q: %w", src.Image.Reference, err)}
		}
		return hostVolume{path: dir, readOnly: true}, nil
	default:
		return hostVolume{}, errors.New("this kind of volume is not supported by the local node (supported: hostPath, emptyDir, configMap, secret, downwardAPI, projected, persistentVolumeClaim, image)")
	}
}

// checkHostPath checks (and for the ...OrCreate types makes) a hostPath
// volume's path as its type says.
func checkHostPath(h *corev1.HostPathVolumeSource) error {
	t := corev1.HostPathUnset
	if h.Type != nil {
		t = *h.Type
	}
	st, err := os.Stat(h.Path)
	switch t {
	case corev1.HostPathDirectoryOrCreate:
		if errors.Is(err, os.ErrNotExist) {
			return os.MkdirAll(h.Path, 0o755)
		}
		if err == nil && !st.IsDir() {
			return fmt.Errorf("hostPath %s: not a folder", h.Path)
		}
		return err
	case corev1.HostPathFileOrCreate:
		if errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(filepath.Dir(h.Path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(h.Path, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}
		if err == nil && st.IsDir() {
			return fmt.Errorf("hostPath %s: a folder, not a file", h.Path)
		}
		return err
	case corev1.HostPathUnset:
		if errors.Is(err, os.ErrNotExist) {
			// The kubelet creates it as a folder; so does the mount.
			return os.MkdirAll(h.Path, 0o755)
		}
		return err
	}
	if err != nil {
		return fmt.Errorf("hostPath %s (type %s): %w", h.Path, t, err)
	}
	m := st.Mode()
	ok := map[corev1.HostPathType]bool{
		corev1.HostPathDirectory: m.IsDir(),
		corev1.HostPathFile:      m.IsRegular(),
		corev1.HostPathSocket:    m&os.ModeSocket != 0,
		corev1.HostPathCharDev:   m&os.ModeCharDevice != 0,
		corev1.HostPathBlockDev:  m&os.ModeDevice != 0 && m&os.ModeCharDevice == 0,
	}[t]
	if !ok {
		return fmt.Errorf("hostPath %s: is not of type %s", h.Path, t)
	}
	return nil
}

// claimPath is the host path of a bound claim's PersistentVolume: a
// hostPath or local volume's path, or where a CSI volume is published for
// the pod.
func (r *podRun) claimPath(ctx context.Context, namespace, claim string, readOnly bool) (string, error) {
	pvc, err := r.p.client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("persistentVolumeClaim %q: %w", claim, err)
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		return "", fmt.Errorf("persistentVolumeClaim %q is not bound (phase %s)", claim, pvc.Status.Phase)
	}
	pv, err := r.p.client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("persistentVolumeClaim %q: persistentVolume %q: %w", claim, pvc.Spec.VolumeName, err)
	}
	var path string
	switch {
	case pv.Spec.HostPath != nil:
		h := *pv.Spec.HostPath
		path = h.Path
		if err := checkHostPath(&h); err != nil {
			return "", fmt.Errorf("persistentVolume %q: %w", pv.Name, err)
		}
	case pv.Spec.Local != nil:
		path = pv.Spec.Local.Path
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("persistentVolume %q: local path: %w", pv.Name, err)
		}
	case pv.Spec.CSI != nil:
		return r.publishCSI(ctx, pv, readOnly)
	default:
		return "", fmt.Errorf("persistentVolume %q: a local node mounts only hostPath, local and CSI volumes", pv.Name)
	}
	return path, nil
}

// isNotFound reports a missing API object.
func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
