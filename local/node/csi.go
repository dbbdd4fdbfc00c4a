package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"

	"github.com/virtkit/virtkit/internal/linuxproc"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// WithCSIDriver lets the node publish the PersistentVolumes of the CSI
// driver name, over its Node service at the Unix socket endpoint, as a
// kubelet publishes them: NodePublishVolume at
// PODDIR/volumes/kubernetes.io~csi/<volume>/mount, NodeUnpublishVolume
// when the pod is torn down.
func WithCSIDriver(name, endpoint string) Option {
	return func(o *options) {
		if o.csiDrivers == nil {
			o.csiDrivers = map[string]string{}
		}
		o.csiDrivers[name] = endpoint
	}
}

// csiPluginDir is where, in a pod's folder, its CSI volumes are published
// (the kubelet's layout).
const csiPluginDir = "kubernetes.io~csi"

// csiVolData is what the node keeps next to a CSI publication
// (vol_data.json, as the kubelet does), so that it can be undone after a
// restart.
type csiVolData struct {
	Driver       string `json:"driverName"`
	VolumeHandle string `json:"volumeHandle"`
}

// csiClients holds one connection per CSI driver, made on first use.
type csiClients struct {
	endpoints map[string]string
	mu        sync.Mutex
	conns     map[string]*grpc.ClientConn
}

func (c *csiClients) node(driver string) (csi.NodeClient, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if conn, ok := c.conns[driver]; ok {
		return csi.NewNodeClient(conn), nil
	}
	ep, ok := c.endpoints[driver]
	if !ok {
		return nil, fmt.Errorf("CSI driver %q is not on this node", driver)
	}
	conn, err := grpc.NewClient("unix://"+ep, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("CSI driver %q: %w", driver, err)
	}
	if c.conns == nil {
		c.conns = map[string]*grpc.ClientConn{}
	}
	c.conns[driver] = conn
	return csi.NewNodeClient(conn), nil
}

func (c *csiClients) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, conn := range c.conns {
		errs = append(errs, conn.Close())
	}
	c.conns = nil
	return errors.Join(errs...)
}

// publishCSI publishes the CSI volume pv into the pod and returns the
// host path its containers mount.
func (r *podRun) publishCSI(ctx context.Context, pv *corev1.PersistentVolume, readOnly bool) (string, error) {
	src := pv.Spec.CSI
	nc, err := r.p.csi.node(src.Driver)
	if err != nil {
		return "", fmt.Errorf("persistentVolume %q: %w", pv.Name, err)
	}
	target := contract.CSIVolumeDir(r.p.cfg.PodsDir(), r.uid, pv.Name)
	dir := filepath.Dir(target)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	// Recorded first: a publication is never made without what undoes it.
	b, err := json.Marshal(csiVolData{Driver: src.Driver, VolumeHandle: src.VolumeHandle})
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "vol_data.json"), b, 0o600); err != nil {
		return "", err
	}
	readOnly = readOnly || src.ReadOnly
	cap := &csi.VolumeCapability{AccessMode: &csi.VolumeCapability_AccessMode{Mode: csiAccessMode(pv.Spec.AccessModes, readOnly)}}
	if pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock {
		cap.AccessType = &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}
	} else {
		cap.AccessType = &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: src.FSType, MountFlags: pv.Spec.MountOptions}}
	}
	_, err = nc.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: src.VolumeHandle, TargetPath: target,
		VolumeCapability: cap, Readonly: readOnly, VolumeContext: src.VolumeAttributes})
	if err != nil {
		return "", fmt.Errorf("persistentVolume %q: publish: %w", pv.Name, err)
	}
	return target, nil
}

// csiAccessMode is the CSI access mode of a volume with these access modes.
func csiAccessMode(modes []corev1.PersistentVolumeAccessMode, readOnly bool) csi.VolumeCapability_AccessMode_Mode {
	has := func(m corev1.PersistentVolumeAccessMode) bool {
		for _, x := range modes {
			if x == m {
				return true
			}
		}
		return false
	}
	switch {
	case has(corev1.ReadWriteMany) && !readOnly:
		return csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	case has(corev1.ReadWriteOncePod) && !readOnly:
		return csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
	case has(corev1.ReadWriteOnce) && !readOnly:
		return csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	case has(corev1.ReadOnlyMany), has(corev1.ReadWriteMany):
		return csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	}
	return csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY
}

// unpublishCSI undoes every CSI publication in the pod folder dir. When a
// driver cannot do it, the node unmounts the target itself: a mount must
// never outlive its pod, nor be removed through.
func (p *Provider) unpublishCSI(ctx context.Context, dir string) error {
	datas, err := filepath.Glob(filepath.Join(dir, "volumes", csiPluginDir, "*", "vol_data.json"))
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range datas {
		target := filepath.Join(filepath.Dir(f), "mount")
		b, err := os.ReadFile(f)
		var vd csiVolData
		if err == nil {
			err = json.Unmarshal(b, &vd)
		}
		if err == nil {
			var nc csi.NodeClient
			if nc, err = p.csi.node(vd.Driver); err == nil {
				_, err = nc.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: vd.VolumeHandle, TargetPath: target})
			}
		}
		if err != nil {
			p.log.Info("the CSI driver did not unpublish a volume; unmounting it", "target", target, "error", err.Error())
			if uerr := unix.Unmount(target, unix.MNT_DETACH); uerr != nil && !errors.Is(uerr, unix.EINVAL) && !errors.Is(uerr, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("unmount %s: %w", target, uerr))
				continue
			}
		}
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeAllUnmounted removes dir and everything in it, unless a mount
// point lies in it: removing through a mount would delete what it shows
// (a volume's data), so such a folder is left, with an error.
func removeAllUnmounted(dir string) error {
	mounts, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	if len(mounts) > 0 {
		return fmt.Errorf("%s: not removed: %d mount points in it, e.g. %s", dir, len(mounts), mounts[0])
	}
	return os.RemoveAll(dir)
}

// mountsUnder lists the mount points at or under dir.
func mountsUnder(dir string) ([]string, error) {
	mounts, err := linuxproc.ReadMounts("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	dir = filepath.Clean(dir)
	var out []string
	for _, m := range mounts {
		if m.MountPoint == dir || strings.HasPrefix(m.MountPoint, dir+"/") {
			out = append(out, m.MountPoint)
		}
	}
	return out, nil
}
