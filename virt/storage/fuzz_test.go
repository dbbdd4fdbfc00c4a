package storage_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/virtkit/virtkit/virt/storage"
)

// FuzzDetectFormat feeds arbitrary headers to DetectFormat, which reads
// images a pod or a guest wrote: whatever the bytes, it returns (no panic,
// no unbounded allocation), a backing file it reports lies within what it
// read, and an image it calls qcow2 or raw has a virtual size that is not
// negative. The seeds are the headers TestDetectFormat knows, and the
// corpus under testdata/fuzz. Run with
//
//	go test ./virt/storage/ -run '^$' -fuzz FuzzDetectFormat -fuzztime 60s
func FuzzDetectFormat(f *testing.F) {
	f.Add(make([]byte, 512))
	f.Add(qcow2Header(3, 10<<30, nil))
	f.Add(qcow2Header(2, 1<<30, func(h []byte) {
		binary.BigEndian.PutUint64(h[8:], 200)
		binary.BigEndian.PutUint32(h[16:], 9)
		copy(h[200:], "/base.img")
	}))
	f.Add(qcow2Header(3, 1<<20, func(h []byte) {
		binary.BigEndian.PutUint32(h[104:], 0xe2792aca)
		binary.BigEndian.PutUint32(h[108:], 3)
		copy(h[112:], "raw")
	})[:120])
	f.Add(qcow2Header(2, 1<<20, nil)[:72])
	f.Add([]byte("KDMV\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := storage.DetectFormat(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		if len(info.BackingFile) > len(data) {
			t.Errorf("backing file name of %d bytes from a %d-byte header", len(info.BackingFile), len(data))
		}
		if info.Format != "" && info.VirtualSize < 0 {
			t.Errorf("%s image with virtual size %d", info.Format, info.VirtualSize)
		}
		if info.Length != int64(len(data)) {
			t.Errorf("Length = %d, want %d", info.Length, len(data))
		}
	})
}
