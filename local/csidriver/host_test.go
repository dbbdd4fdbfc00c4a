package csidriver_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr/testr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/local/csidriver"
)

// serve starts a driver on a socket of its own and returns a connection
// to it, and its root.
func serve(t *testing.T, opts ...csidriver.Option) (*grpc.ClientConn, string, string) {
	t.Helper()
	dir := testenv.Dir(t)
	root := filepath.Join(dir, "root")
	d, err := csidriver.New(root, "node-a", append([]csidriver.Option{csidriver.WithLogger(testr.New(t))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := csidriver.Listen(filepath.Join(dir, "csi.sock"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, lis) }()
	conn, err := grpc.NewClient("unix://"+lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return conn, root, dir
}

var mountRW = &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
	AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER}}

// On the host: what a pod writes through its publication is in the
// volume; a snapshot taken then and a volume made from it hold it, while
// later writes stay in the first volume only; a volume still published is
// not deleted; unpublishing leaves no mount and no target.
func TestPublishSnapshotRestoreOnHost(t *testing.T) {
	testenv.Integration(t)
	conn, _, dir := serve(t)
	ctx := context.Background()
	cc, nc := csi.NewControllerClient(conn), csi.NewNodeClient(conn)

	vol, err := cc.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-1", VolumeCapabilities: []*csi.VolumeCapability{mountRW},
		CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20}, Parameters: map[string]string{"csi.storage.k8s.io/pvc/name": "disk"}})
	must(t, err)
	id := vol.GetVolume().GetVolumeId()
	target := filepath.Join(dir, "pod", "mount")
	must(t, os.MkdirAll(filepath.Dir(target), 0o750))
	_, err = nc.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: target, VolumeCapability: mountRW})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(target, "marker"), []byte("one"), 0o644))

	_, err = cc.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("DeleteVolume of a published volume: %v, want FailedPrecondition", err)
	}

	snap, err := cc.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snapshot-1", SourceVolumeId: id})
	must(t, err)
	if !snap.GetSnapshot().GetReadyToUse() || snap.GetSnapshot().GetSizeBytes() != 1<<20 {
		t.Errorf("snapshot: %v", snap.GetSnapshot())
	}
	must(t, os.WriteFile(filepath.Join(target, "marker"), []byte("two"), 0o644))

	restored, err := cc.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-2", VolumeCapabilities: []*csi.VolumeCapability{mountRW},
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.GetSnapshot().GetSnapshotId()}}}})
	must(t, err)
	if got := restored.GetVolume().GetCapacityBytes(); got != csidriver.DefaultCapacity {
		t.Errorf("restored capacity %d, want %d", got, csidriver.DefaultCapacity)
	}
	target2 := filepath.Join(dir, "pod", "restored")
	_, err = nc.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: restored.GetVolume().GetVolumeId(), TargetPath: target2, VolumeCapability: mountRW, Readonly: true})
	must(t, err)
	if b, err := os.ReadFile(filepath.Join(target2, "marker")); err != nil || string(b) != "one" {
		t.Errorf("restored marker: %q, %v; want the snapshot's \"one\"", b, err)
	}
	if err := os.WriteFile(filepath.Join(target2, "other"), nil, 0o644); !isReadOnly(err) {
		t.Errorf("a write to a read-only publication: %v, want a read-only file system", err)
	}

	for _, p := range []struct{ id, target string }{{id, target}, {restored.GetVolume().GetVolumeId(), target2}} {
		_, err = nc.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: p.id, TargetPath: p.target})
		must(t, err)
		if _, err := os.Lstat(p.target); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after unpublishing: %v, want it gone", p.target, err)
		}
		_, err = cc.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: p.id})
		must(t, err)
	}
	_, err = cc.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: snap.GetSnapshot().GetSnapshotId()})
	must(t, err)
	list, err := cc.ListSnapshots(ctx, &csi.ListSnapshotsRequest{})
	must(t, err)
	if len(list.GetEntries()) != 0 {
		t.Errorf("snapshots left: %v", list.GetEntries())
	}
}

func isReadOnly(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe) && pe.Err.Error() == "read-only file system"
}
