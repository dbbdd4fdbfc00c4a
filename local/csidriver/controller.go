package csidriver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// DefaultCapacity is a new volume's size when the request names none.
const DefaultCapacity = 1 << 30

// ControllerGetCapabilities implements csi.ControllerServer.
func (d *Driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	var caps []*csi.ControllerServiceCapability
	for _, t := range []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
		csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
		csi.ControllerServiceCapability_RPC_CLONE_VOLUME,
		csi.ControllerServiceCapability_RPC_EXPAND_VOLUME,
	} {
		caps = append(caps, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: t}}})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

// CreateVolume implements csi.ControllerServer: an empty folder (or sparse
// file, for Block), or a copy of a snapshot or of another volume. Asked
// again with the same name, it returns the same volume if it fits the
// request, and AlreadyExists otherwise.
func (d *Driver) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name: required")
	}
	block, err := accessKind("volume_capabilities", req.GetVolumeCapabilities())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := checkParameters("parameters", req.GetParameters()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	want, limit := req.GetCapacityRange().GetRequiredBytes(), req.GetCapacityRange().GetLimitBytes()
	if want < 0 || limit < 0 {
		return nil, status.Error(codes.InvalidArgument, "capacity_range: sizes cannot be negative")
	}
	if limit > 0 && want > limit {
		return nil, status.Errorf(codes.OutOfRange, "capacity_range: required_bytes %d is more than limit_bytes %d", want, limit)
	}
	if want == 0 {
		want = min(DefaultCapacity, limit)
		if limit == 0 {
			want = DefaultCapacity
		}
	}
	rec := volumeRecord{ID: idOf(req.GetName()), Name: req.GetName(), Capacity: want, Block: block}
	src := req.GetVolumeContentSource()
	switch {
	case src == nil:
	case src.GetSnapshot() != nil:
		rec.SourceSnapshot = src.GetSnapshot().GetSnapshotId()
	case src.GetVolume() != nil:
		rec.SourceVolume = src.GetVolume().GetVolumeId()
	default:
		return nil, status.Error(codes.InvalidArgument, "volume_content_source: a snapshot or a volume is required")
	}

	unlock := d.store.locks.lock("volume/" + rec.ID)
	defer unlock()
	if old, err := d.store.volume(rec.ID); err == nil {
		if old.Name != rec.Name || old.Block != rec.Block || old.Capacity < want || (limit > 0 && old.Capacity > limit) ||
			old.SourceSnapshot != rec.SourceSnapshot || old.SourceVolume != rec.SourceVolume {
			return nil, status.Errorf(codes.AlreadyExists, "name: volume %q exists with other properties (capacity %d, block %t)", rec.Name, old.Capacity, old.Block)
		}
		return &csi.CreateVolumeResponse{Volume: d.csiVolume(old)}, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "volume %q: %v", rec.Name, err)
	}

	fill, err := d.volumeFill(&rec, limit)
	if err != nil {
		return nil, err
	}
	rec.Created = d.now().UTC()
	if err := d.store.create(d.store.volumeDir(rec.ID), volumeRecordF, &rec, fill); err != nil {
		return nil, status.Errorf(codes.Internal, "volume %q: %v", rec.Name, err)
	}
	d.log.Info("volume created", "volume", rec.ID, "capacity", rec.Capacity, "block", rec.Block, "fromSnapshot", rec.SourceSnapshot, "fromVolume", rec.SourceVolume)
	return &csi.CreateVolumeResponse{Volume: d.csiVolume(rec)}, nil
}

// volumeFill is how a new volume's content is made: empty, or copied from
// its source, whose size it takes when larger than asked (within limit).
func (d *Driver) volumeFill(rec *volumeRecord, limit int64) (fill, error) {
	var from string
	var size int64
	var block bool
	switch {
	case rec.SourceSnapshot != "":
		s, err := d.store.snapshot(rec.SourceSnapshot)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, status.Errorf(codes.NotFound, "volume_content_source.snapshot.snapshot_id: no snapshot %q", rec.SourceSnapshot)
		} else if err != nil {
			return nil, status.Errorf(codes.Internal, "snapshot %q: %v", rec.SourceSnapshot, err)
		}
		from, size, block = d.store.snapshotData(s), s.Size, s.Block
	case rec.SourceVolume != "":
		v, err := d.volume("volume_content_source.volume.volume_id", rec.SourceVolume)
		if err != nil {
			return nil, err
		}
		from, size, block = d.store.volumeData(v), v.Capacity, v.Block
	}
	if from != "" {
		if block != rec.Block {
			return nil, status.Errorf(codes.InvalidArgument, "volume_content_source: the source is %s, the volume asked for is %s", kind(block), kind(rec.Block))
		}
		if size > rec.Capacity {
			if limit > 0 && size > limit {
				return nil, status.Errorf(codes.OutOfRange, "capacity_range.limit_bytes: %d is less than the source's %d bytes", limit, size)
			}
			rec.Capacity = size
		}
	}
	capacity := rec.Capacity
	if rec.Block {
		return func(dir string) error {
			target := filepath.Join(dir, blockFile)
			if from != "" {
				if err := copyFile(from, target); err != nil {
					return err
				}
				return os.Truncate(target, capacity)
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			return errors.Join(f.Truncate(capacity), f.Close())
		}, nil
	}
	return func(dir string) error {
		target := filepath.Join(dir, dataDir)
		if from != "" {
			return copyTree(from, target)
		}
		// 0777: the folder is the volume's root, written by whatever user
		// the pod runs as (KubeVirt's launchers run QEMU as 107).
		if err := os.Mkdir(target, 0o777); err != nil {
			return err
		}
		return os.Chmod(target, 0o777)
	}, nil
}

func kind(block bool) string {
	if block {
		return "a Block volume"
	}
	return "a file system"
}

func (d *Driver) csiVolume(r volumeRecord) *csi.Volume {
	v := &csi.Volume{VolumeId: r.ID, CapacityBytes: r.Capacity}
	switch {
	case r.SourceSnapshot != "":
		v.ContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: r.SourceSnapshot}}}
	case r.SourceVolume != "":
		v.ContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: r.SourceVolume}}}
	}
	return v
}

// DeleteVolume implements csi.ControllerServer. A volume that is gone is
// deleted; one still published on the node is refused (FailedPrecondition).
func (d *Driver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id: required")
	}
	if !validID(id) {
		return &csi.DeleteVolumeResponse{}, nil // never one of ours
	}
	unlock := d.store.locks.lock("volume/" + id)
	defer unlock()
	targets, err := d.publications(id)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "volume %q: %v", id, err)
	}
	if len(targets) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %q is still published at %s", id, targets[0])
	}
	if err := d.store.remove(d.store.volumeDir(id)); err != nil {
		return nil, status.Errorf(codes.Internal, "volume %q: %v", id, err)
	}
	d.log.Info("volume deleted", "volume", id)
	return &csi.DeleteVolumeResponse{}, nil
}

// ValidateVolumeCapabilities implements csi.ControllerServer.
func (d *Driver) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id: required")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "volume_capabilities: required")
	}
	v, err := d.volume("volume_id", req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if err := checkParameters("parameters", req.GetParameters()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
	}
	block, err := accessKind("volume_capabilities", req.GetVolumeCapabilities())
	if err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
	}
	if block != v.Block {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: fmt.Sprintf("volume_capabilities: volume %q is %s", v.ID, kind(v.Block))}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext: req.GetVolumeContext(), VolumeCapabilities: req.GetVolumeCapabilities(), Parameters: req.GetParameters()}}, nil
}

// ControllerExpandVolume implements csi.ControllerServer: a folder's
// recorded capacity grows; a Block volume's file grows too, and each loop
// device over it learns its new size. Nothing shrinks.
func (d *Driver) ControllerExpandVolume(_ context.Context, req *csi.ControllerExpandVolumeRequest) (*csi.ControllerExpandVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id: required")
	}
	want, limit := req.GetCapacityRange().GetRequiredBytes(), req.GetCapacityRange().GetLimitBytes()
	if want <= 0 {
		return nil, status.Error(codes.InvalidArgument, "capacity_range.required_bytes: a positive size is required")
	}
	if limit > 0 && want > limit {
		return nil, status.Errorf(codes.OutOfRange, "capacity_range: required_bytes %d is more than limit_bytes %d", want, limit)
	}
	unlock := d.store.locks.lock("volume/" + id)
	defer unlock()
	v, err := d.volume("volume_id", id)
	if err != nil {
		return nil, err
	}
	if want > v.Capacity {
		if v.Block {
			if err := os.Truncate(d.store.volumeData(v), want); err != nil {
				return nil, status.Errorf(codes.Internal, "volume %q: %v", id, err)
			}
			targets, err := d.publications(id)
			if err != nil {
				return nil, status.Errorf(codes.Internal, "volume %q: %v", id, err)
			}
			for _, t := range targets {
				if err := d.mounter.Refresh(t); err != nil {
					return nil, status.Errorf(codes.Internal, "volume %q at %s: %v", id, t, err)
				}
			}
		}
		v.Capacity = want
		if err := d.store.updateVolume(v); err != nil {
			return nil, status.Errorf(codes.Internal, "volume %q: %v", id, err)
		}
		d.log.Info("volume expanded", "volume", id, "capacity", want)
	}
	return &csi.ControllerExpandVolumeResponse{CapacityBytes: v.Capacity, NodeExpansionRequired: false}, nil
}

// CreateSnapshot implements csi.ControllerServer: a copy of the volume,
// ready at once. Asked again with the same name and source, it returns the
// same snapshot; with another source, AlreadyExists.
func (d *Driver) CreateSnapshot(_ context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name: required")
	}
	if req.GetSourceVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "source_volume_id: required")
	}
	if err := checkParameters("parameters", req.GetParameters()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	id := idOf(req.GetName())
	unlock := d.store.locks.lock("snapshot/" + id)
	defer unlock()
	if old, err := d.store.snapshot(id); err == nil {
		if old.SourceVolume != req.GetSourceVolumeId() || old.Name != req.GetName() {
			return nil, status.Errorf(codes.AlreadyExists, "name: snapshot %q exists of volume %q", req.GetName(), old.SourceVolume)
		}
		return &csi.CreateSnapshotResponse{Snapshot: csiSnapshot(old)}, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "snapshot %q: %v", req.GetName(), err)
	}
	unlockVol := d.store.locks.lock("volume/" + req.GetSourceVolumeId())
	defer unlockVol()
	v, err := d.volume("source_volume_id", req.GetSourceVolumeId())
	if err != nil {
		return nil, err
	}
	rec := snapshotRecord{ID: id, Name: req.GetName(), SourceVolume: v.ID, Size: v.Capacity, Block: v.Block, Created: d.now().UTC()}
	from := d.store.volumeData(v)
	err = d.store.create(d.store.snapshotDir(id), snapshotRecordF, &rec, func(dir string) error {
		if v.Block {
			return copyFile(from, filepath.Join(dir, blockFile))
		}
		return copyTree(from, filepath.Join(dir, dataDir))
	})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "snapshot %q of volume %q: %v", req.GetName(), v.ID, err)
	}
	d.log.Info("snapshot created", "snapshot", id, "volume", v.ID, "size", v.Capacity)
	return &csi.CreateSnapshotResponse{Snapshot: csiSnapshot(rec)}, nil
}

func csiSnapshot(r snapshotRecord) *csi.Snapshot {
	return &csi.Snapshot{SnapshotId: r.ID, SourceVolumeId: r.SourceVolume, SizeBytes: r.Size,
		CreationTime: timestamppb.New(r.Created), ReadyToUse: true}
}

// DeleteSnapshot implements csi.ControllerServer. Volumes made from the
// snapshot are copies and keep their data.
func (d *Driver) DeleteSnapshot(_ context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "snapshot_id: required")
	}
	if !validID(id) {
		return &csi.DeleteSnapshotResponse{}, nil
	}
	unlock := d.store.locks.lock("snapshot/" + id)
	defer unlock()
	if err := d.store.remove(d.store.snapshotDir(id)); err != nil {
		return nil, status.Errorf(codes.Internal, "snapshot %q: %v", id, err)
	}
	d.log.Info("snapshot deleted", "snapshot", id)
	return &csi.DeleteSnapshotResponse{}, nil
}

// ListSnapshots implements csi.ControllerServer, in ID order; the next
// token is the index of the next entry.
func (d *Driver) ListSnapshots(_ context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	if req.GetMaxEntries() < 0 {
		return nil, status.Error(codes.InvalidArgument, "max_entries: cannot be negative")
	}
	all, err := d.store.snapshots()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "snapshots: %v", err)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	var match []snapshotRecord
	for _, s := range all {
		if (req.GetSnapshotId() == "" || s.ID == req.GetSnapshotId()) && (req.GetSourceVolumeId() == "" || s.SourceVolume == req.GetSourceVolumeId()) {
			match = append(match, s)
		}
	}
	start := 0
	if t := req.GetStartingToken(); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 || n > len(match) {
			return nil, status.Errorf(codes.Aborted, "starting_token: %q is not a token this driver gave", t)
		}
		start = n
	}
	end := len(match)
	if m := int(req.GetMaxEntries()); m > 0 && start+m < end {
		end = start + m
	}
	resp := &csi.ListSnapshotsResponse{}
	for _, s := range match[start:end] {
		resp.Entries = append(resp.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: csiSnapshot(s)})
	}
	if end < len(match) {
		resp.NextToken = strconv.Itoa(end)
	}
	return resp, nil
}
