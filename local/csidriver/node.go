package csidriver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// publication is what the node keeps of a volume it published, under
// publications/<volume ID>/: the record says the volume is in use (which
// DeleteVolume refuses) and how it was published.
type publication struct {
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
	Block    bool   `json:"block,omitempty"`
}

func (d *Driver) publicationFile(volume, target string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(target)))
	return filepath.Join(d.store.root, publicationsDir, volume, hex.EncodeToString(sum[:12])+".json")
}

// publications lists where volume is published now. A record whose
// target is no longer a mount point (a node that crashed, an unmount by
// hand) is dropped.
func (d *Driver) publications(volume string) ([]string, error) {
	dir := filepath.Join(d.store.root, publicationsDir, volume)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		var p publication
		f := filepath.Join(dir, e.Name())
		if err := readRecord(f, &p); err != nil {
			return nil, err
		}
		mounted, err := d.mounter.IsMounted(p.Target)
		if err != nil {
			return nil, err
		}
		if !mounted {
			if err := os.Remove(f); err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, p.Target)
	}
	_ = os.Remove(dir) // when empty
	return out, nil
}

// NodeGetCapabilities implements csi.NodeServer: volume statistics. There
// is no staging: a folder is bound where it is to be published.
func (d *Driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{
		{Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: csi.NodeServiceCapability_RPC_GET_VOLUME_STATS}}},
	}}, nil
}

// NodeGetInfo implements csi.NodeServer.
func (d *Driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: d.nodeID}, nil
}

// NodePublishVolume implements csi.NodeServer: the volume's folder is
// bound at target_path (a folder made if missing), or a Block volume's
// loop device at target_path (a file made if missing). Publishing again
// at the same target the same way does nothing.
func (d *Driver) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetTargetPath()
	switch {
	case id == "":
		return nil, status.Error(codes.InvalidArgument, "volume_id: required")
	case target == "":
		return nil, status.Error(codes.InvalidArgument, "target_path: required")
	case !filepath.IsAbs(target):
		return nil, status.Errorf(codes.InvalidArgument, "target_path: %q is not an absolute path", target)
	case req.GetVolumeCapability() == nil:
		return nil, status.Error(codes.InvalidArgument, "volume_capability: required")
	}
	block, err := capabilityKind("volume_capability", req.GetVolumeCapability())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	readOnly := req.GetReadonly() || readOnlyMode(req.GetVolumeCapability())
	unlock := d.store.locks.lock("volume/" + id)
	defer unlock()
	v, err := d.volume("volume_id", id)
	if err != nil {
		return nil, err
	}
	if block != v.Block {
		return nil, status.Errorf(codes.InvalidArgument, "volume_capability: volume %q is %s", id, kind(v.Block))
	}
	target = filepath.Clean(target)
	rec := publication{Target: target, ReadOnly: readOnly, Block: block}
	mounted, err := d.mounter.IsMounted(target)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "target_path: %v", err)
	}
	if mounted {
		var old publication
		if err := readRecord(d.publicationFile(id, target), &old); err != nil || old != rec {
			return nil, status.Errorf(codes.AlreadyExists, "target_path: %s holds another mount", target)
		}
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if err := makeTarget(target, block); err != nil {
		return nil, status.Errorf(codes.Internal, "target_path: %v", err)
	}
	pf := d.publicationFile(id, target)
	if err := os.MkdirAll(filepath.Dir(pf), 0o700); err != nil {
		return nil, status.Errorf(codes.Internal, "volume %q: %v", id, err)
	}
	// Recorded first: a crash between the two leaves a record whose target
	// is no mount point, which publications drops, never a mount unknown.
	if err := writeRecord(pf, rec); err != nil {
		return nil, status.Errorf(codes.Internal, "volume %q: %v", id, err)
	}
	if block {
		err = d.mounter.BindBlock(d.store.volumeData(v), target, readOnly)
	} else {
		err = d.mounter.BindDir(d.store.volumeData(v), target, readOnly)
	}
	if err != nil {
		_ = os.Remove(pf)
		return nil, status.Errorf(codes.Internal, "volume %q at %s: %v", id, target, err)
	}
	d.log.Info("volume published", "volume", id, "target", target, "readOnly", readOnly, "block", block)
	return &csi.NodePublishVolumeResponse{}, nil
}

// makeTarget makes target, a folder or (for a Block volume) an empty
// file, unless it is there; its parent must exist.
func makeTarget(target string, block bool) error {
	st, err := os.Lstat(target)
	if err == nil {
		if st.IsDir() == block || st.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%s exists and is not an empty %s", target, map[bool]string{true: "file", false: "folder"}[block])
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if !block {
		return os.Mkdir(target, 0o750)
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// NodeUnpublishVolume implements csi.NodeServer: target_path is unmounted
// and removed. A target that is gone already is unpublished.
func (d *Driver) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetTargetPath()
	switch {
	case id == "":
		return nil, status.Error(codes.InvalidArgument, "volume_id: required")
	case target == "":
		return nil, status.Error(codes.InvalidArgument, "target_path: required")
	}
	target = filepath.Clean(target)
	unlock := d.store.locks.lock("volume/" + id)
	defer unlock()
	if err := d.mounter.Unmount(target); err != nil {
		return nil, status.Errorf(codes.Internal, "target_path: %v", err)
	}
	// Only an empty folder or file goes: never what a mount still shows.
	if mounted, err := d.mounter.IsMounted(target); err != nil || mounted {
		return nil, status.Errorf(codes.Internal, "target_path: %s is still a mount point (%v)", target, err)
	}
	if err := removeTarget(target); err != nil {
		return nil, status.Errorf(codes.Internal, "target_path: %v", err)
	}
	if err := os.Remove(d.publicationFile(id, target)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "volume %q: %v", id, err)
	}
	_ = os.Remove(filepath.Dir(d.publicationFile(id, target))) // when empty
	d.log.Info("volume unpublished", "volume", id, "target", target)
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// removeTarget removes an empty folder or an empty regular file at target.
func removeTarget(target string) error {
	st, err := os.Lstat(target)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Mode().IsRegular() && st.Size() != 0 {
		return fmt.Errorf("%s: not empty; left in place", target)
	}
	return os.Remove(target) // fails on a folder that is not empty
}

// NodeGetVolumeStats implements csi.NodeServer: the file system's bytes
// and inodes under a published folder, the capacity of a Block volume.
func (d *Driver) NodeGetVolumeStats(_ context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	id, path := req.GetVolumeId(), req.GetVolumePath()
	switch {
	case id == "":
		return nil, status.Error(codes.InvalidArgument, "volume_id: required")
	case path == "":
		return nil, status.Error(codes.InvalidArgument, "volume_path: required")
	}
	v, err := d.volume("volume_id", id)
	if err != nil {
		return nil, err
	}
	var p publication
	if err := readRecord(d.publicationFile(id, path), &p); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume_path: volume %q is not published at %s", id, path)
	}
	if v.Block {
		return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{{Unit: csi.VolumeUsage_BYTES, Total: v.Capacity}}}, nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(d.store.volumeData(v), &st); err != nil {
		return nil, status.Errorf(codes.Internal, "volume %q: %v", id, err)
	}
	bs := int64(st.Bsize)
	return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{
		{Unit: csi.VolumeUsage_BYTES, Total: int64(st.Blocks) * bs, Available: int64(st.Bavail) * bs, Used: int64(st.Blocks-st.Bfree) * bs},
		{Unit: csi.VolumeUsage_INODES, Total: int64(st.Files), Available: int64(st.Ffree), Used: int64(st.Files - st.Ffree)},
	}}, nil
}
