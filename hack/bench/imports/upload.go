package main

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/virtkit/virtkit/deploy/certs"
	"github.com/virtkit/virtkit/virt/storage/importer"
	"github.com/virtkit/virtkit/virt/storage/upload"
)

// uploadRig is the upload path of virt-api and an upload pod in one
// process: the proxy (TLS) in front of an upload server (mutual TLS,
// pinned) that imports into target; and, for the plain side, an HTTPS
// server that stores the request body into target and syncs it.
type uploadRig struct {
	proxy, plain *httptest.Server
	key          crypto.Signer
	proxyCA      string // PEM file of the proxy's certificate, for curl
	plainCA      string
}

type oneBackend struct{ be upload.Backend }

func (o oneBackend) Backend(context.Context, string, string) (upload.Backend, error) {
	return o.be, nil
}

func newUploadRig(dir, target string, size int64) (*uploadRig, func(), error) {
	now := time.Now()
	ca, err := certs.NewCA("bench-upload-ca", now, 24*time.Hour)
	if err != nil {
		return nil, nil, err
	}
	client, err := ca.Issue(certs.Request{CommonName: "proxy", Client: true, Validity: 2 * time.Hour}, now)
	if err != nil {
		return nil, nil, err
	}
	certPEM, keyPEM, err := upload.NewServerCert("cdi-upload-bench", now)
	if err != nil {
		return nil, nil, err
	}
	serving, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	im := importer.New(importer.WithXZ("xz"))
	// A new server per upload, as each upload pod takes one.
	var srv *upload.Server
	newServer := func() *upload.Server {
		return upload.NewServer(func(ctx context.Context, r *http.Request) error {
			_, err := im.Import(ctx, importer.NewStreamSource(r.Body, r.ContentLength, "the upload"),
				importer.Target{Path: target, Size: size, ScratchDir: filepath.Join(dir, "scratch")})
			return err
		}, importer.IsRetryable, "proxy")
	}
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { srv.ServeHTTP(w, r) }))
	backend.TLS = upload.ServerTLS(serving, pool)
	backend.Config.ErrorLog = log.New(io.Discard, "", 0)
	backend.StartTLS()
	u, _ := url.Parse(backend.URL)
	pinned, err := upload.PinnedTLS(&tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{client.Cert.Raw}, PrivateKey: client.Key}}}, certPEM)
	if err != nil {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	proxy := upload.NewProxy(func() (crypto.PublicKey, error) { return key.Public(), nil }, oneBackend{upload.Backend{URL: u, TLS: pinned}})
	rig := &uploadRig{key: key}
	rig.proxy = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv = newServer()
		proxy.ServeHTTP(w, r)
	}))
	rig.proxy.Config.ErrorLog = log.New(io.Discard, "", 0)
	rig.proxy.StartTLS()
	rig.plain = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := os.Create(target)
		if err == nil {
			_, err = io.Copy(f, r.Body)
			if err == nil {
				err = f.Sync()
			}
			f.Close()
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}))
	rig.plain.Config.ErrorLog = log.New(io.Discard, "", 0)
	rig.plain.StartTLS()
	rig.proxyCA, rig.plainCA = filepath.Join(dir, "proxy-ca.pem"), filepath.Join(dir, "plain-ca.pem")
	for f, s := range map[string]*httptest.Server{rig.proxyCA: rig.proxy, rig.plainCA: rig.plain} {
		if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}), 0o600); err != nil {
			return nil, nil, err
		}
	}
	return rig, func() { rig.proxy.Close(); rig.plain.Close(); backend.Close() }, nil
}

// virtkit uploads file with curl through the proxy, as virtctl posts it,
// with a fresh token.
func (r *uploadRig) virtkit(ctx context.Context, file string) (time.Duration, error) {
	tok, err := upload.Issue(r.key, upload.Claims{Namespace: "bench", Claim: "disk", Expires: time.Now().Add(upload.TokenLifetime)})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	err = command(ctx, "curl", "-sS", "--fail", "--cacert", r.proxyCA, "-X", "POST", "-H", "Authorization: Bearer "+tok,
		"-H", "Content-Type: application/octet-stream", "-T", file, r.proxy.URL+upload.Path)
	return time.Since(start), err
}

// plainUpload is `curl -T` of file to a server that stores it.
func (r *uploadRig) plainUpload(ctx context.Context, file string) (time.Duration, error) {
	start := time.Now()
	err := command(ctx, "curl", "-sS", "--fail", "--cacert", r.plainCA, "-T", file, r.plain.URL+"/disk.img")
	return time.Since(start), err
}

// benchUpload measures uploads of the raw image file, runs times each
// side after one warm-up each, and returns the ratio of the medians.
func benchUpload(ctx context.Context, dir, raw, target string, size int64, runs int) (float64, error) {
	rig, stop, err := newUploadRig(dir, target, size)
	if err != nil {
		return 0, err
	}
	defer stop()
	for _, f := range []func(context.Context, string) (time.Duration, error){rig.virtkit, rig.plainUpload} {
		if _, err := f(ctx, raw); err != nil {
			return 0, fmt.Errorf("upload warm-up: %w", err)
		}
		_ = os.Remove(target)
	}
	var vk, pl []time.Duration
	for i := 0; i < runs; i++ {
		d, err := rig.virtkit(ctx, raw)
		if err != nil {
			return 0, fmt.Errorf("upload run %d: %w", i, err)
		}
		vk = append(vk, d)
		_ = os.Remove(target)
		if d, err = rig.plainUpload(ctx, raw); err != nil {
			return 0, fmt.Errorf("plain upload run %d: %w", i, err)
		}
		pl = append(pl, d)
		_ = os.Remove(target)
	}
	report("upload virtkit", vk, size)
	report("upload plain", pl, size)
	return median(pl).Seconds() / median(vk).Seconds(), nil
}
