package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/storage/importer"
	"github.com/virtkit/virtkit/virt/storage/importer/contract"
	"github.com/virtkit/virtkit/virt/storage/upload"
)

// sendOnce sends a's file to the upload server at a's URL with the TLS
// files of tlsDir: a clone's source pod. It exits 1 to be restarted while
// the server cannot take it yet, and 0 with a fatal outcome when the
// server refuses it.
func sendOnce(ctx context.Context, a contract.Args, tlsDir string, log logr.Logger) (contract.Outcome, int) {
	cfg, err := cloneTLS(tlsDir)
	if err != nil {
		return contract.Outcome{Message: err.Error(), Reason: "InvalidArguments", Fatal: true}, exitDone
	}
	u, err := url.Parse(a.URL)
	if err != nil || u.Scheme != "https" {
		return contract.Outcome{Message: fmt.Sprintf("--url %q: must be an https URL", a.URL), Reason: "InvalidArguments", Fatal: true}, exitDone
	}
	rc, size, err := importer.FileSource{Path: a.Path, Name: a.Name}.Open(ctx)
	if err != nil {
		return failure(err)
	}
	defer rc.Close()
	log.Info("sending", "source", a.Name, "bytes", size, "to", u.Host)
	switch err := upload.Send(ctx, u, cfg, rc, size); {
	case err == nil:
		return contract.Outcome{Message: "Clone Complete"}, exitDone
	case upload.IsFinal(err):
		var se *upload.SendError
		errors.As(err, &se)
		return contract.Outcome{Message: "the clone's target refused " + a.Name + ": " + se.Message, Reason: "CloneFailed", Fatal: true}, exitDone
	default:
		return contract.Outcome{Message: err.Error(), Reason: "CloneFailed"}, exitRetry
	}
}

// cloneTLS is the client TLS of a clone's source pod: its certificate, and
// the upload server's pinned.
func cloneTLS(dir string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, corev1.TLSCertKey), filepath.Join(dir, corev1.TLSPrivateKeyKey))
	if err != nil {
		return nil, fmt.Errorf("the clone's client certificate: %w", err)
	}
	server, err := readBounded(filepath.Join(dir, contract.CloneServerCertKey))
	if err != nil {
		return nil, fmt.Errorf("the upload server's certificate: %w", err)
	}
	return upload.PinnedTLS(&tls.Config{Certificates: []tls.Certificate{cert}}, server)
}
