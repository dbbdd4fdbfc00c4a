package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/virtkit/virtkit/virt/storage/importer"
	"github.com/virtkit/virtkit/virt/storage/importer/contract"
)

// maxCertFile bounds what is read of one CA file.
const maxCertFile = 1 << 20

// httpSource is the http source args describe, with the credentials from
// the environment and the CAs of args' CertDir.
func httpSource(a contract.Args, getenv func(string) string) (*importer.HTTPSource, error) {
	ca, proxyCA, err := caBundles(a)
	if err != nil {
		return nil, err
	}
	src := &importer.HTTPSource{URL: a.URL, Username: getenv(contract.EnvAccessKeyID), Password: getenv(contract.EnvSecretKey), CABundle: ca, ProxyCABundle: proxyCA}
	if len(a.Headers) > 0 {
		src.Header = http.Header{}
		for _, h := range a.Headers {
			name, value, _ := strings.Cut(h, ":")
			src.Header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
		}
	}
	return src, nil
}

// registrySource is the registry source args describe, with the
// credentials from the environment and the CAs of args' CertDir.
func registrySource(a contract.Args, getenv func(string) string) (*importer.RegistrySource, error) {
	ca, proxyCA, err := caBundles(a)
	if err != nil {
		return nil, err
	}
	return &importer.RegistrySource{Image: strings.TrimPrefix(a.URL, contract.RegistryScheme), CABundle: ca, ProxyCABundle: proxyCA,
		Username: getenv(contract.EnvAccessKeyID), Password: getenv(contract.EnvSecretKey),
		Insecure: a.InsecureRegistry, Architecture: a.Architecture}, nil
}

// caBundles are the PEM of args' CertDir and ProxyCertDir, nil for one
// not given.
func caBundles(a contract.Args) (ca, proxyCA []byte, err error) {
	if a.CertDir != "" {
		if ca, err = readCerts(a.CertDir); err != nil {
			return nil, nil, err
		}
	}
	if a.ProxyCertDir != "" {
		if proxyCA, err = readCerts(a.ProxyCertDir); err != nil {
			return nil, nil, err
		}
	}
	return ca, proxyCA, nil
}

// readCerts concatenates the files of a ConfigMap folder: each key is a
// file (the kubelet's ..data links included, which point within the
// folder); hidden entries are skipped.
func readCerts(dir string) ([]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("the CA bundle in %s: %w", dir, err)
	}
	var all bytes.Buffer
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if resolved, err := filepath.EvalSymlinks(p); err != nil || !within(dir, resolved) {
			return nil, fmt.Errorf("the CA bundle in %s: %s points outside the folder", dir, e.Name())
		}
		b, err := readBounded(p)
		if err != nil {
			return nil, fmt.Errorf("the CA bundle in %s: %w", dir, err)
		}
		all.Write(b)
		all.WriteByte('\n')
	}
	if all.Len() == 0 {
		return nil, fmt.Errorf("the CA bundle in %s: no certificate", dir)
	}
	return all.Bytes(), nil
}

func within(dir, p string) bool {
	d, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// readBounded reads a file of at most maxCertFile bytes.
func readBounded(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCertFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxCertFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", p, maxCertFile)
	}
	return b, nil
}
