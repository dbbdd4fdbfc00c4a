package storage

// SourceType says how a disk's bytes reach QEMU.
type SourceType string

const (
	// SourceFile is an image file (disk.img on a filesystem PVC, an overlay,
	// an ISO, an emptyDisk).
	SourceFile SourceType = "file"
	// SourceBlock is a block device (a block-mode PVC).
	SourceBlock SourceType = "block"
)

// Format is a disk image format, detected from the image's content, never
// trusted from its name.
type Format string

const (
	FormatRaw   Format = "raw"
	FormatQCOW2 Format = "qcow2"
)

// DiskPlan is how one volume of a VMI reaches the guest: the facts virt/domain
// needs to write the disk's source and driver. virt/storage fills it; it is
// plain data.
type DiskPlan struct {
	// Volume is the name of the VMI volume (spec.volumes[].name) it serves.
	Volume string `json:"volume"`
	// Source is file or block.
	Source SourceType `json:"source"`
	// Path is the image file or block device, as QEMU sees it.
	Path string `json:"path"`
	// Format is the image format at Path.
	Format Format `json:"format"`
	// ReadOnly is set when the source itself must not be written (an ISO, a
	// read-only PVC), whatever the disk's own readonly flag says.
	ReadOnly bool `json:"readOnly,omitempty"`
	// CapacityBytes is the virtual size the guest sees; zero when unknown.
	CapacityBytes int64 `json:"capacityBytes,omitempty"`
	// LogicalBlockSize and PhysicalBlockSize are the volume's block sizes in
	// bytes, as the storage underneath reports them; zero when unknown. A
	// disk with blockSize.matchVolume presents them to the guest.
	LogicalBlockSize  uint `json:"logicalBlockSize,omitempty"`
	PhysicalBlockSize uint `json:"physicalBlockSize,omitempty"`

	// The fields below are for preparation (Manager.Prepare, Release);
	// virt/domain does not need them.

	// Kind is the VMI volume source the disk comes from.
	Kind Kind `json:"kind,omitempty"`
	// Create is set when Prepare makes the image at Path: an overlay, an
	// emptyDisk, an ISO, a disk.img absent from its claim, a DiskOrCreate
	// hostDisk.
	Create bool `json:"create,omitempty"`
	// BackingPath and BackingFormat are the read-only base image of a qcow2
	// overlay at Path (ephemeral and containerDisk volumes). The overlay's
	// header names them, so QEMU never writes the base.
	BackingPath   string `json:"backingPath,omitempty"`
	BackingFormat Format `json:"backingFormat,omitempty"`
	// ContentDir is the folder whose files a configMap, secret,
	// serviceAccount or downwardAPI disk carries.
	ContentDir string `json:"contentDir,omitempty"`
	// Label is the volume label of an ISO disk (cidata, config-2, or the
	// volume's volumeLabel).
	Label string `json:"label,omitempty"`
	// Hotpluggable is set for a claim or data volume marked hotpluggable:
	// it is attached to the running domain, not written into its document.
	Hotpluggable bool `json:"hotpluggable,omitempty"`
}

// Kind names a VMI volume source, spelled as its field in the API.
type Kind string

const (
	KindPersistentVolumeClaim Kind = "persistentVolumeClaim"
	KindDataVolume            Kind = "dataVolume"
	KindHostDisk              Kind = "hostDisk"
	KindEmptyDisk             Kind = "emptyDisk"
	KindEphemeral             Kind = "ephemeral"
	KindContainerDisk         Kind = "containerDisk"
	KindCloudInitNoCloud      Kind = "cloudInitNoCloud"
	KindCloudInitConfigDrive  Kind = "cloudInitConfigDrive"
	KindConfigMap             Kind = "configMap"
	KindSecret                Kind = "secret"
	KindServiceAccount        Kind = "serviceAccount"
	KindDownwardAPI           Kind = "downwardAPI"
)

// Discardable reports whether the image at Path lives only as long as the
// VMI on this node (overlays, emptyDisks, ISOs): Release removes exactly
// these. A claim's disk.img and a hostDisk are never discardable.
func (p DiskPlan) Discardable() bool {
	switch p.Kind {
	case KindEmptyDisk, KindEphemeral, KindContainerDisk, KindCloudInitNoCloud,
		KindCloudInitConfigDrive, KindConfigMap, KindSecret, KindServiceAccount, KindDownwardAPI:
		return true
	}
	return false
}

// Plan is the per-volume result of planning a VMI's storage, keyed by volume name.
type Plan map[string]DiskPlan
