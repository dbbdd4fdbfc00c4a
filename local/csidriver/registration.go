package csidriver

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// ServeRegistration registers the driver with a kubelet, as
// node-driver-registrar does: it serves the kubelet's plugin registration
// API on a socket in the kubelet's plugins_registry folder pluginsDir,
// telling the kubelet that the driver's Node service is at endpoint (the
// socket [Listen] made). The kubelet then asks the driver for its node ID
// and publishes its volumes into pods. It serves until ctx ends and removes
// its socket then.
func ServeRegistration(ctx context.Context, pluginsDir, endpoint string, log logr.Logger) error {
	path := filepath.Join(pluginsDir, Name+"-reg.sock")
	lis, err := Listen(path)
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, &registration{endpoint: endpoint, log: log})
	go func() {
		<-ctx.Done()
		srv.Stop()
	}()
	err = srv.Serve(lis)
	if errors.Is(err, grpc.ErrServerStopped) {
		err = nil
	}
	return err
}

type registration struct {
	registerapi.UnimplementedRegistrationServer
	endpoint string
	log      logr.Logger
}

// GetInfo implements the registration API.
func (r *registration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: Name, Endpoint: r.endpoint, SupportedVersions: []string{"1.0.0"}}, nil
}

// NotifyRegistrationStatus implements the registration API: the kubelet's
// answer is logged.
func (r *registration) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if s.GetPluginRegistered() {
		r.log.Info("registered with the kubelet", "endpoint", r.endpoint)
	} else {
		r.log.Info("the kubelet refused the registration", "error", s.GetError())
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}
