package images

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
)

// FakePackage is one package of a FakeArchive.
type FakePackage struct {
	Version string
	Depends []string
	// Files maps a path such as "usr/lib/x/libx.so.1" to its content; a
	// path ending in "/" is a folder, and a content starting with "->" is
	// a symbolic link to what follows.
	Files map[string]string
}

// FakeArchive is a Debian archive in memory, for tests of code that builds
// images: Resolve follows Depends, Files writes each package's files as
// dpkg-deb would (with "./" names, parents first, owned by root).
type FakeArchive struct {
	mu   sync.Mutex
	pkgs map[string]FakePackage
}

var _ Packages = (*FakeArchive)(nil)

// NewFakeArchive returns an archive of pkgs, by name.
func NewFakeArchive(pkgs map[string]FakePackage) *FakeArchive {
	return &FakeArchive{pkgs: pkgs}
}

// Set adds or replaces a package.
func (f *FakeArchive) Set(name string, p FakePackage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pkgs[name] = p
}

// Resolve implements Packages.
func (f *FakeArchive) Resolve(ctx context.Context, names []string) ([]Package, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[string]bool{}
	var visit func(n string) error
	visit = func(n string) error {
		if seen[n] {
			return nil
		}
		p, ok := f.pkgs[n]
		if !ok {
			return fmt.Errorf("fake archive: no package %q", n)
		}
		seen[n] = true
		for _, d := range p.Depends {
			if err := visit(d); err != nil {
				return err
			}
		}
		return nil
	}
	for _, n := range names {
		if err := visit(n); err != nil {
			return nil, err
		}
	}
	var out []Package
	for n := range seen {
		tarball, err := f.tarLocked(n)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(tarball)
		out = append(out, Package{Name: n, Version: f.pkgs[n].Version, Arch: "all", SHA256: hex.EncodeToString(sum[:])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Files implements Packages.
func (f *FakeArchive) Files(ctx context.Context, p Package) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fp, ok := f.pkgs[p.Name]; !ok || fp.Version != p.Version {
		return nil, fmt.Errorf("fake archive: no package %s %s", p.Name, p.Version)
	}
	b, err := f.tarLocked(p.Name)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (f *FakeArchive) tarLocked(name string) ([]byte, error) {
	files := f.pkgs[name].Files
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths) // parents sort before their children
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "./", Mode: 0o755}); err != nil {
		return nil, err
	}
	for _, p := range paths {
		body := files[p]
		h := &tar.Header{Name: "./" + p, Mode: 0o644}
		switch {
		case strings.HasSuffix(p, "/"):
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		case strings.HasPrefix(body, "->"):
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, strings.TrimPrefix(body, "->"), 0o777
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := io.WriteString(tw, body); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
