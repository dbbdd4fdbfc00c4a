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
}

// Plan is the per-volume result of planning a VMI's storage, keyed by volume name.
type Plan map[string]DiskPlan
