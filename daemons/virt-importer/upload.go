package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/storage/importer"
	"github.com/virtkit/virtkit/virt/storage/importer/contract"
	"github.com/virtkit/virtkit/virt/storage/upload"
)

// serveUpload serves the upload server on contract.UploadPort with the
// TLS files of tlsDir until one upload is imported or ctx ends.
func serveUpload(ctx context.Context, im importer.Interface, a contract.Args, tlsDir string, log logr.Logger) (contract.Outcome, int) {
	cfg, err := uploadTLS(tlsDir)
	if err != nil {
		return contract.Outcome{Message: err.Error(), Reason: "InvalidArguments", Fatal: true}, exitDone
	}
	l, err := net.Listen("tcp", ":"+strconv.Itoa(contract.UploadPort))
	if err != nil {
		return contract.Outcome{Message: fmt.Sprintf("listening for uploads: %v", err), Reason: "ImportFailed"}, exitRetry
	}
	return uploadOnce(ctx, im, a, tls.NewListener(l, cfg), log)
}

// uploadOnce serves uploads on l until one is imported into a's target or
// ctx ends.
func uploadOnce(ctx context.Context, im importer.Interface, a contract.Args, l net.Listener, log logr.Logger) (contract.Outcome, int) {
	dst := target(a)
	var (
		mu  sync.Mutex
		res importer.Result
	)
	srv := upload.NewServer(func(ctx context.Context, r *http.Request) error {
		log.Info("upload started", "length", r.ContentLength)
		got, err := im.Import(ctx, importer.NewStreamSource(r.Body, r.ContentLength, "the upload"), dst)
		if err != nil {
			log.Info("upload not imported", "error", err.Error())
			return err
		}
		mu.Lock()
		res = got
		mu.Unlock()
		return nil
	}, func(err error) bool { return importer.IsRetryable(err) || errors.Is(err, context.Canceled) }, a.ClientName)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(l) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	select {
	case <-srv.Done():
		mu.Lock()
		defer mu.Unlock()
		return contract.Outcome{Message: "Upload Complete", Format: res.Format, Compression: res.Compression, VirtualSize: res.VirtualSize,
			PreallocationApplied: preallocated(a)}, exitDone
	case <-ctx.Done():
		return contract.Outcome{Message: "stopped before an upload arrived", Reason: "ImportFailed"}, exitRetry
	}
}

// uploadTLS is the upload server's TLS from the files of dir: its
// certificate and the proxy's CAs.
func uploadTLS(dir string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, corev1.TLSCertKey), filepath.Join(dir, corev1.TLSPrivateKeyKey))
	if err != nil {
		return nil, fmt.Errorf("the upload server's certificate: %w", err)
	}
	ca, err := readBounded(filepath.Join(dir, corev1.ServiceAccountRootCAKey))
	if err != nil {
		return nil, fmt.Errorf("the upload proxy's CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("the upload proxy's CA: no certificate in %s", filepath.Join(dir, corev1.ServiceAccountRootCAKey))
	}
	return upload.ServerTLS(cert, pool), nil
}
