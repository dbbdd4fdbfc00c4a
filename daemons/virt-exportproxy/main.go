// Command virt-exportproxy serves the external links of
// VirtualMachineExports, as KubeVirt's virt-exportproxy: each request
// under /api/export.kubevirt.io/ goes, token and all, to its export's
// server pod, whose certificate is checked against the export CA. It is
// thin wiring of virtapi/exportapi.NewProxyServer.
//
// Its serving certificate and the export CA are files (mounted Secrets),
// read again as they are renewed. It reads exports and pods, nothing
// else. Exit status: 0 on SIGTERM or SIGINT, 1 when it could not serve,
// 2 for bad flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/virtkit/virtkit/deploy/certs/certfiles"
	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virtapi/exportapi"
)

func main() {
	var (
		listen   = flag.String("listen", ":8443", "address of the HTTPS port")
		certFile = flag.String("tls-cert-file", "", "serving certificate (PEM), for the names users reach the proxy by (required)")
		keyFile  = flag.String("tls-private-key-file", "", "key of --tls-cert-file (required)")
		caFile   = flag.String("export-ca-file", "", "the export CA (PEM), which export servers' certificates are checked against (required)")
	)
	flag.Parse()
	log := logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, nil))
	if *certFile == "" || *keyFile == "" || *caFile == "" {
		log.Error(errors.New("--tls-cert-file, --tls-private-key-file and --export-ca-file are required"), "bad flags")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx, *listen, *certFile, *keyFile, *caFile, log)
	stop()
	if err != nil {
		log.Error(err, "virt-exportproxy failed")
		os.Exit(1)
	}
}

// grace is how long downloads under way may go on once it is told to stop.
const grace = 10 * time.Second

func run(ctx context.Context, addr, certFile, keyFile, caFile string, log logr.Logger) error {
	files, err := certfiles.New(certFile, keyFile, caFile, certfiles.WithLogger(log.WithName("certificates")))
	if err != nil {
		return err
	}
	restCfg, err := config.GetConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	// Uncached: two reads a request, and no right to list or watch.
	cl, err := client.New(restCfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := exportapi.NewProxyServer(cl, files.Pool, files.GetCertificate, log)
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	log.Info("serving", "address", ln.Addr().String())
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
