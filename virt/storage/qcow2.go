package storage

import (
	"encoding/binary"
	"fmt"
	"io"
)

// A fresh qcow2 (version 3, 64 KiB clusters, 16-bit refcounts) is four
// kinds of cluster, all but the first sparse zeros until QEMU allocates:
//
//	cluster 0     header, backing-format extension, backing file name
//	cluster 1     refcount table: one entry, pointing at cluster 2
//	cluster 2     refcount block: a count of 1 for each metadata cluster
//	cluster 3...  L1 table, all zero (nothing allocated yet)
//
// This is what `qemu-img create -f qcow2 [-b BASE -F FMT]` writes, without
// running a program; `qemu-img check` finds it clean (see qcow2_test.go).
const (
	qcow2ClusterBits = 16
	qcow2ClusterSize = 1 << qcow2ClusterBits
	qcow2HeaderV3    = 104
	// One L2 table maps clusterSize/8 clusters of guest data.
	qcow2BytesPerL1Entry = qcow2ClusterSize * (qcow2ClusterSize / 8)
	// One refcount block of 16-bit entries counts this many clusters.
	qcow2RefcountsPerBlock = qcow2ClusterSize / 2
)

// QCOW2Options describe a new qcow2 image.
type QCOW2Options struct {
	// Size is the virtual size in bytes; it is rounded up to 512.
	Size int64
	// BackingFile, when set, makes the image a copy-on-write overlay on it;
	// BackingFormat is the base's format (written into the header, so
	// neither libvirt nor QEMU probes it).
	BackingFile   string
	BackingFormat Format
}

// WriteQCOW2 writes an empty qcow2 image to w, which must be empty and
// zero-filled beyond what is written (a new file). It returns the length the
// file must have: truncate the file to it (sparse) after writing.
func WriteQCOW2(w io.WriterAt, o QCOW2Options) (int64, error) {
	if o.Size <= 0 {
		return 0, fmt.Errorf("qcow2: size %d must be positive", o.Size)
	}
	size := (o.Size + 511) / 512 * 512
	if len(o.BackingFile) > qcow2MaxBackingName {
		return 0, fmt.Errorf("qcow2: backing file name longer than %d bytes", qcow2MaxBackingName)
	}
	if o.BackingFile != "" && o.BackingFormat == "" {
		return 0, fmt.Errorf("qcow2: backing file %s without a format", o.BackingFile)
	}
	l1Entries := (size + qcow2BytesPerL1Entry - 1) / qcow2BytesPerL1Entry
	l1Clusters := max((l1Entries*8+qcow2ClusterSize-1)/qcow2ClusterSize, 1)
	metaClusters := 3 + l1Clusters
	if metaClusters > qcow2RefcountsPerBlock {
		return 0, fmt.Errorf("qcow2: size %d too large", size)
	}
	if l1Entries > 1<<25 { // QEMU's QCOW_MAX_L1_SIZE / 8
		return 0, fmt.Errorf("qcow2: size %d too large", size)
	}

	be := binary.BigEndian
	h := make([]byte, qcow2ClusterSize)
	copy(h, qcow2Magic)
	be.PutUint32(h[4:], 3)
	be.PutUint32(h[20:], qcow2ClusterBits)
	be.PutUint64(h[24:], uint64(size))
	be.PutUint32(h[36:], uint32(l1Entries))
	be.PutUint64(h[40:], 3*qcow2ClusterSize) // L1 table
	be.PutUint64(h[48:], 1*qcow2ClusterSize) // refcount table
	be.PutUint32(h[56:], 1)                  // refcount table clusters
	be.PutUint32(h[96:], 4)                  // refcount order: 16-bit
	be.PutUint32(h[100:], qcow2HeaderV3)

	off := qcow2HeaderV3
	if o.BackingFile != "" {
		f := string(o.BackingFormat)
		be.PutUint32(h[off:], qcow2ExtBackingFmt)
		be.PutUint32(h[off+4:], uint32(len(f)))
		copy(h[off+8:], f)
		off += 8 + (len(f)+7)/8*8
	}
	off += 8 // end-of-extensions marker: type 0, length 0
	if o.BackingFile != "" {
		be.PutUint64(h[8:], uint64(off))
		be.PutUint32(h[16:], uint32(len(o.BackingFile)))
		copy(h[off:], o.BackingFile)
		off += len(o.BackingFile)
	}
	if _, err := w.WriteAt(h[:off], 0); err != nil {
		return 0, err
	}

	var refTable [8]byte
	be.PutUint64(refTable[:], 2*qcow2ClusterSize)
	if _, err := w.WriteAt(refTable[:], 1*qcow2ClusterSize); err != nil {
		return 0, err
	}
	refBlock := make([]byte, metaClusters*2)
	for i := range metaClusters {
		be.PutUint16(refBlock[i*2:], 1)
	}
	if _, err := w.WriteAt(refBlock, 2*qcow2ClusterSize); err != nil {
		return 0, err
	}
	return metaClusters * qcow2ClusterSize, nil
}
