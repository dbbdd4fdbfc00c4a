package export

import (
	"fmt"
	"path"
	"regexp"

	exportv1 "kubevirt.io/api/export/v1beta1"
)

// Content is what a volume holds, which decides how it is served.
type Content string

const (
	// DiskImage: a virtual machine disk: a block claim, or a file system
	// claim with the image in disk.img (CDI's "kubevirt" content type).
	// Served as raw and gzip.
	DiskImage Content = "disk"
	// Archive: any other file system (CDI's "archive" content type).
	// Served as a folder listing and as a tar.gz stream.
	Archive Content = "archive"
)

// A Volume is one claim an export serves.
type Volume struct {
	// Claim is the claim's name; it names the volume in the URLs and in
	// status.links.
	Claim string `json:"claim"`
	// Name, when set, names the volume in status.links instead: an export
	// of a snapshot serves claims it made (<export>-<claim>) under the
	// backed-up claims' names, as KubeVirt lists them.
	Name string `json:"name,omitempty"`
	// Path is where the server finds it: the folder the claim is mounted
	// at, or for a Block claim its device.
	Path string `json:"path"`
	// Block says Path is a block device (always a DiskImage).
	Block bool `json:"block,omitempty"`
	// Content is what the claim holds.
	Content Content `json:"content"`
}

// Formats lists the formats v is served in with the path of each, in the
// order KubeVirt lists them: raw and gzip for a disk image, dir and tar.gz
// for any other file system.
func Formats(v Volume) []exportv1.VirtualMachineExportVolumeFormat {
	if v.Block || v.Content == DiskImage {
		return []exportv1.VirtualMachineExportVolumeFormat{
			{Format: exportv1.KubeVirtRaw, Url: RawPath(v.Claim)},
			{Format: exportv1.KubeVirtGz, Url: GzipPath(v.Claim)},
		}
	}
	return []exportv1.VirtualMachineExportVolumeFormat{
		{Format: exportv1.Dir, Url: DirPath(v.Claim)},
		{Format: exportv1.ArchiveGz, Url: ArchivePath(v.Claim)},
	}
}

// claimName is what a claim's name may be: a DNS subdomain. A name in a URL
// path must not hold a slash or a dot segment.
var claimName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// validate checks v before it is served.
func (v Volume) validate() error {
	switch {
	case len(v.Claim) > 253 || !claimName.MatchString(v.Claim):
		return fmt.Errorf("volume %q: claim: not a claim's name", v.Claim)
	case v.Path == "" || !path.IsAbs(v.Path):
		return fmt.Errorf("volume %s: path %q: must be absolute", v.Claim, v.Path)
	case v.Block && v.Content != DiskImage && v.Content != "":
		return fmt.Errorf("volume %s: content %q: a block volume holds a disk image", v.Claim, v.Content)
	case !v.Block && v.Content != DiskImage && v.Content != Archive:
		return fmt.Errorf("volume %s: content %q: must be %q or %q", v.Claim, v.Content, DiskImage, Archive)
	}
	return nil
}
