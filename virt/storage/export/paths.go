package export

import (
	"path"

	exportv1 "kubevirt.io/api/export/v1beta1"

	"github.com/virtkit/virtkit/virt/storage/export/token"
)

// ReadyPath answers 200 once the server serves; it needs no token.
const ReadyPath = "/exportready"

// File names below a volume's path.
const (
	rawName     = "disk.img"
	gzipName    = "disk.img.gz"
	archiveName = "disk.tar.gz"
	dirName     = "dir"
)

// RawPath is the path a disk image volume of claim is served at as it is.
func RawPath(claim string) string { return path.Join("/volumes", claim, rawName) }

// GzipPath is the path a disk image volume of claim is served at
// gzip-compressed.
func GzipPath(claim string) string { return path.Join("/volumes", claim, gzipName) }

// ArchivePath is the path a file system volume of claim is served at as a
// tar.gz stream.
func ArchivePath(claim string) string { return path.Join("/volumes", claim, archiveName) }

// DirPath is the path a file system volume of claim is listed at; the
// files lie below DirPath + "/".
func DirPath(claim string) string { return path.Join("/volumes", claim, dirName) }

// Audience is whom a manifest is written for: a client inside the cluster
// (the Service's name) or outside it (the export proxy's).
type Audience string

const (
	Internal Audience = "internal"
	External Audience = "external"
)

// ManifestPath is the path of the manifest of type t for audience a.
func ManifestPath(a Audience, t exportv1.ExportManifestType) string {
	leaf := "all"
	if t == exportv1.AuthHeader {
		leaf = "secret"
	}
	return path.Join("/", string(a), "manifests", leaf)
}

// AuthHeaderValue is the value of the auth-header-secret manifest's token:
// CDI's secretExtraHeaders form of the export's token.
func AuthHeaderValue(tok string) string { return token.Header + ":" + tok }
