package csidriver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Name is the driver's name: the provisioner of the StorageClass and the
// driver of the VolumeSnapshotClass and CSIDriver virt-local installs.
const Name = "local.csi.virtkit.io"

// Driver is the CSI driver. Make it with [New]; it serves with [Driver.Serve].
type Driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer

	store   *store
	nodeID  string
	mounter Mounter
	log     logr.Logger
	now     func() time.Time
	version string
}

// Option changes a [Driver].
type Option func(*Driver)

// WithMounter sets how the node service mounts (default [HostMounter]).
func WithMounter(m Mounter) Option { return func(d *Driver) { d.mounter = m } }

// WithLogger sets the logger: one line per volume or snapshot made or
// removed and per publication, and each failed call.
func WithLogger(l logr.Logger) Option { return func(d *Driver) { d.log = l } }

// WithClock sets the clock of snapshots' creation times.
func WithClock(now func() time.Time) Option { return func(d *Driver) { d.now = now } }

// WithVersion sets the version GetPluginInfo reports (default "dev").
func WithVersion(v string) Option { return func(d *Driver) { d.version = v } }

// New is a driver keeping its volumes and snapshots under root (made if
// missing) and publishing them as node nodeID. What an earlier driver on
// the same root left half made is removed.
func New(root, nodeID string, opts ...Option) (*Driver, error) {
	if nodeID == "" {
		return nil, errors.New("csidriver: a node ID is required")
	}
	s, err := newStore(root)
	if err != nil {
		return nil, err
	}
	d := &Driver{store: s, nodeID: nodeID, mounter: HostMounter{}, log: logr.Discard(), now: time.Now, version: "dev"}
	for _, o := range opts {
		o(d)
	}
	return d, nil
}

// Listen listens on the Unix socket at path, replacing a socket an
// earlier run left there (but nothing else), readable by its owner only.
func Listen(path string) (net.Listener, error) {
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("csidriver: %s exists and is not a socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("csidriver: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("csidriver: %w", err)
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("csidriver: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		lis.Close()
		return nil, fmt.Errorf("csidriver: %w", err)
	}
	return lis, nil
}

// Serve serves the Identity, Controller and Node services on lis until ctx
// ends; calls under way then finish first.
func (d *Driver) Serve(ctx context.Context, lis net.Listener) error {
	srv := grpc.NewServer(grpc.UnaryInterceptor(d.logCalls))
	csi.RegisterIdentityServer(srv, d)
	csi.RegisterControllerServer(srv, d)
	csi.RegisterNodeServer(srv, d)
	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			srv.GracefulStop()
		case <-stopped:
		}
	}()
	err := srv.Serve(lis)
	close(stopped)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// logCalls logs each failed call with its method.
func (d *Driver) logCalls(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	if err != nil {
		d.log.Info("call failed", "method", info.FullMethod, "error", err.Error())
	}
	return resp, err
}

// volume reads volume id's record for a call, as a gRPC status naming the
// request's field: NotFound when there is none, Internal when it cannot
// be read.
func (d *Driver) volume(field, id string) (volumeRecord, error) {
	v, err := d.store.volume(id)
	if errors.Is(err, fs.ErrNotExist) {
		return v, status.Errorf(codes.NotFound, "%s: no volume %q", field, id)
	} else if err != nil {
		return v, status.Errorf(codes.Internal, "volume %q: %v", id, err)
	}
	return v, nil
}
