package images

import (
	"context"
	"io"
)

// Package is one Debian package at an exact version.
type Package struct {
	Name    string
	Version string
	Arch    string
	// SHA256 is the hex digest of the .deb file, as the archive lists it.
	SHA256 string
}

// Packages is what a Builder needs of a Debian archive.
type Packages interface {
	// Resolve returns the packages named and everything they depend on,
	// each once, sorted by name, at the versions the archive offers now.
	Resolve(ctx context.Context, names []string) ([]Package, error)
	// Files opens a tar stream of the files p installs, as
	// `dpkg-deb --fsys-tarfile` writes it. The caller closes it.
	Files(ctx context.Context, p Package) (io.ReadCloser, error)
}
