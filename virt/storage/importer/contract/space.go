package contract

import "math"

// AlignBlock is the alignment of an imported disk's size, as CDI's.
const AlignBlock = 1 << 20

// DefaultFilesystemOverhead is the share of a file-system claim its file
// system keeps for itself (CDI's global default, CDIConfig
// status.filesystemOverhead.global).
const DefaultFilesystemOverhead = 0.06

// UsableSpace is the size of the disk image a file-system claim of
// capacity bytes holds: capacity less the file system's overhead, aligned
// down to AlignBlock (CDI's rule, so that a DataVolume gets the same disk
// size under virtkit as under CDI).
func UsableSpace(capacity int64, overhead float64) int64 {
	space := int64(math.Ceil(float64(capacity) / (1 + overhead)))
	return space / AlignBlock * AlignBlock
}

// RequiredSpace is the claim size a file-system disk of size bytes needs:
// size aligned up to AlignBlock plus the file system's overhead (CDI's rule
// for a DataVolume's spec.storage).
func RequiredSpace(size int64, overhead float64) int64 {
	return int64(math.Ceil(float64(AlignUp(size)) * (1 + overhead)))
}

// AlignUp is size rounded up to a whole number of AlignBlock.
func AlignUp(size int64) int64 {
	return (size + AlignBlock - 1) / AlignBlock * AlignBlock
}
