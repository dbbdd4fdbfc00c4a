package devices

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// Plugin serves one Device to the kubelet.
type Plugin struct {
	dev   Device
	dir   string
	log   logr.Logger
	every time.Duration
}

// Option changes a Plugin.
type Option func(*Plugin)

// WithDir sets the kubelet's device plugin folder (default
// /var/lib/kubelet/device-plugins, where the kubelet's registration socket
// is).
func WithDir(dir string) Option { return func(p *Plugin) { p.dir = dir } }

// WithLogger logs registrations and health changes.
func WithLogger(l logr.Logger) Option { return func(p *Plugin) { p.log = l } }

// WithCheckInterval sets how often the plugin checks that its socket is
// still there (the kubelet restarted otherwise) and its device node's
// health; default 1 s.
func WithCheckInterval(d time.Duration) Option { return func(p *Plugin) { p.every = d } }

// NewPlugin returns a Plugin of dev.
func NewPlugin(dev Device, opts ...Option) *Plugin {
	p := &Plugin{dev: dev, dir: pluginapi.DevicePluginPath, log: logr.Discard(), every: time.Second}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Socket is the plugin's socket: DIR/kubevirt-NAME.sock.
func (p *Plugin) Socket() string { return filepath.Join(p.dir, "kubevirt-"+p.dev.Name()+".sock") }

// Run serves and registers the plugin until ctx ends; when its socket
// disappears (the kubelet restarted and cleared the folder) it serves and
// registers again. It returns ctx's error, or the first failure to serve.
func (p *Plugin) Run(ctx context.Context) error {
	for {
		err := p.serveOnce(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			p.log.Info("device plugin failed; retrying", "resource", p.dev.Resource, "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(p.every):
		}
	}
}

// serveOnce serves on a fresh socket and registers, until ctx ends or the
// socket is removed.
func (p *Plugin) serveOnce(ctx context.Context) error {
	sock := p.Socket()
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, &server{p: p})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		srv.Stop()
		_ = os.Remove(sock)
	}()
	if err := p.register(ctx); err != nil {
		return err
	}
	p.log.Info("device plugin registered", "resource", p.dev.Resource, "socket", sock)
	tick := time.NewTicker(p.every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-served:
			return fmt.Errorf("serving %s: %w", sock, err)
		case <-tick.C:
			if _, err := os.Lstat(sock); err != nil {
				p.log.Info("device plugin socket gone (the kubelet restarted); registering again", "resource", p.dev.Resource)
				return nil
			}
		}
	}
}

// register tells the kubelet of the plugin through its registration socket.
func (p *Plugin) register(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := grpc.NewClient("unix://"+filepath.Join(p.dir, filepath.Base(pluginapi.KubeletSocket)),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("kubelet registration socket: %w", err)
	}
	defer conn.Close()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     filepath.Base(p.Socket()),
		ResourceName: p.dev.Resource,
		Options:      &pluginapi.DevicePluginOptions{},
	})
	if err != nil {
		return fmt.Errorf("registering %s with the kubelet: %w", p.dev.Resource, err)
	}
	return nil
}

// healthy reports whether the device node exists.
func (p *Plugin) healthy() bool {
	st, err := os.Stat(p.dev.Path)
	return err == nil && st.Mode()&os.ModeDevice != 0
}

// list is the plugin's devices, all with health h.
func (p *Plugin) list(h string) []*pluginapi.Device {
	out := make([]*pluginapi.Device, p.dev.Count)
	for i := range out {
		out[i] = &pluginapi.Device{ID: p.dev.Name() + strconv.Itoa(i), Health: h}
	}
	return out
}

// server is the DevicePlugin service of one Plugin.
type server struct {
	pluginapi.UnimplementedDevicePluginServer
	p *Plugin
}

func (s *server) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the devices, and again whenever the device node's
// health changes.
func (s *server) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	health := ""
	tick := time.NewTicker(s.p.every)
	defer tick.Stop()
	for {
		h := pluginapi.Unhealthy
		if s.p.healthy() {
			h = pluginapi.Healthy
		}
		if h != health {
			if health != "" {
				s.p.log.Info("device health changed", "resource", s.p.dev.Resource, "path", s.p.dev.Path, "health", h)
			}
			health = h
			if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: s.p.list(h)}); err != nil {
				return err
			}
		}
		select {
		case <-stream.Context().Done():
			return nil
		case <-tick.C:
		}
	}
}

// Allocate gives each container the device node, read-write, at its host path.
func (s *server) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for range req.ContainerRequests {
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Devices: []*pluginapi.DeviceSpec{{ContainerPath: s.p.dev.Path, HostPath: s.p.dev.Path, Permissions: "rw"}},
		})
	}
	return resp, nil
}

func (s *server) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}
