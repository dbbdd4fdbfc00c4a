package storage_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/virt/storage"
)

// buffer is an io.WriterAt and io.ReaderAt in memory.
type buffer struct{ b []byte }

func (w *buffer) WriteAt(p []byte, off int64) (int, error) {
	if end := int(off) + len(p); end > len(w.b) {
		w.b = append(w.b, make([]byte, end-len(w.b))...)
	}
	return copy(w.b[off:], p), nil
}

func (w *buffer) ReadAt(p []byte, off int64) (int, error) {
	r := bytes.NewReader(w.b)
	return r.ReadAt(p, off)
}

func qcow2Header(version uint32, size uint64, mutate func([]byte)) []byte {
	h := make([]byte, 4096)
	copy(h, "QFI\xfb")
	binary.BigEndian.PutUint32(h[4:], version)
	binary.BigEndian.PutUint32(h[20:], 16)
	binary.BigEndian.PutUint64(h[24:], size)
	if version == 3 {
		binary.BigEndian.PutUint32(h[96:], 4)
		binary.BigEndian.PutUint32(h[100:], 104)
	}
	if mutate != nil {
		mutate(h)
	}
	return h
}

func TestDetectFormat(t *testing.T) {
	vdi := make([]byte, 512)
	copy(vdi[0x40:], "\x7f\x10\xda\xbe")
	v2backing := qcow2Header(2, 1<<30, func(h []byte) {
		binary.BigEndian.PutUint64(h[8:], 200)
		binary.BigEndian.PutUint32(h[16:], 9)
		copy(h[200:], "/base.img")
	})
	tests := []struct {
		name string
		data []byte
		size int64
		want storage.ImageInfo
	}{
		{"zeros are raw", make([]byte, 4096), 4096, storage.ImageInfo{Format: storage.FormatRaw, VirtualSize: 4096, Length: 4096}},
		{"empty file is raw", nil, 0, storage.ImageInfo{Format: storage.FormatRaw}},
		{"an ISO is raw", append(make([]byte, 0x8001), "CD001"...), 0x8006, storage.ImageInfo{Format: storage.FormatRaw, VirtualSize: 0x8006, Length: 0x8006}},
		{"qcow2 v3", qcow2Header(3, 10<<30, nil), 4096, storage.ImageInfo{Format: storage.FormatQCOW2, VirtualSize: 10 << 30, Length: 4096}},
		{"qcow2 v2 with backing file", v2backing, 4096, storage.ImageInfo{Format: storage.FormatQCOW2, VirtualSize: 1 << 30, BackingFile: "/base.img", Length: 4096}},
		{"qcow2 v3 external data file bit", qcow2Header(3, 1<<20, func(h []byte) { h[79] = 4 }), 4096,
			storage.ImageInfo{Format: storage.FormatQCOW2, VirtualSize: 1 << 20, ExternalData: true, Length: 4096}},
		{"encrypted qcow2", qcow2Header(3, 1<<20, func(h []byte) { h[35] = 2 }), 4096, storage.ImageInfo{Detected: "qcow2 (encrypted)", VirtualSize: 1 << 20, Length: 4096}},
		{"qcow v1", qcow2Header(1, 1<<20, nil), 4096, storage.ImageInfo{Detected: "qcow (version 1)", VirtualSize: 1 << 20, Length: 4096}},
		{"qcow2 v4", qcow2Header(4, 1<<20, nil), 4096, storage.ImageInfo{Detected: "qcow2 version 4", Length: 4096}},
		{"vmdk", []byte("KDMV\x01\x00\x00\x00"), 8, storage.ImageInfo{Detected: "vmdk", VirtualSize: 8, Length: 8}},
		{"vhdx", []byte("vhdxfile"), 8, storage.ImageInfo{Detected: "vhdx", VirtualSize: 8, Length: 8}},
		{"vdi", vdi, 512, storage.ImageInfo{Detected: "vdi", VirtualSize: 512, Length: 512}},
		{"luks", []byte("LUKS\xba\xbe\x00\x01"), 8, storage.ImageInfo{Detected: "luks", VirtualSize: 8, Length: 8}},
		// A backing name whose offset plus length wraps past 2^64 once
		// indexed the header out of range (a panic in the handler).
		{"72-byte qcow2 v2 header, backing offset wraps", qcow2Header(2, 1<<20, func(h []byte) {
			binary.BigEndian.PutUint64(h[8:], ^uint64(0)-4)
			binary.BigEndian.PutUint32(h[16:], 16)
		})[:72], 72, storage.ImageInfo{Format: storage.FormatQCOW2, VirtualSize: 1 << 20, BackingFile: "(unreadable)", Length: 72}},
		{"backing name beyond the header read", qcow2Header(2, 1<<20, func(h []byte) {
			binary.BigEndian.PutUint64(h[8:], 4090)
			binary.BigEndian.PutUint32(h[16:], 100)
		}), 4096, storage.ImageInfo{Format: storage.FormatQCOW2, VirtualSize: 1 << 20, BackingFile: "(unreadable)", Length: 4096}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := storage.DetectFormat(bytes.NewReader(tc.data), tc.size)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := storage.DetectFormat(bytes.NewReader([]byte("QFI\xfb\x00\x00")), 6); err == nil {
		t.Error("a truncated qcow2 header was accepted")
	}
}

// WriteQCOW2 and DetectFormat agree, with and without a backing file.
func TestWriteQCOW2RoundTrip(t *testing.T) {
	for _, o := range []storage.QCOW2Options{
		{Size: 1},
		{Size: 16 << 20},
		{Size: 5 << 40},
		{Size: 1 << 30, BackingFile: "/var/run/kubevirt/container-disks/disk_0.img", BackingFormat: storage.FormatRaw},
		{Size: 3<<30 + 512, BackingFile: "/x/base.qcow2", BackingFormat: storage.FormatQCOW2},
	} {
		var w buffer
		end, err := storage.WriteQCOW2(&w, o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		if end%65536 != 0 || int(end) < len(w.b) {
			t.Errorf("%+v: file length %d (written %d)", o, end, len(w.b))
		}
		got, err := storage.DetectFormat(&w, end)
		if err != nil {
			t.Fatal(err)
		}
		want := storage.ImageInfo{Format: storage.FormatQCOW2, VirtualSize: (o.Size + 511) / 512 * 512, Length: end,
			BackingFile: o.BackingFile, BackingFormat: string(o.BackingFormat)}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", o, diff)
		}
	}
	for _, bad := range []storage.QCOW2Options{{Size: 0}, {Size: -1}, {Size: 1, BackingFile: "/b"}} {
		if _, err := storage.WriteQCOW2(&buffer{}, bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

type qemuImgInfo struct {
	Format          string `json:"format"`
	VirtualSize     int64  `json:"virtual-size"`
	BackingFilename string `json:"backing-filename"`
	BackingFormat   string `json:"backing-filename-format"`
}

func qemuImg(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := exec.Command("qemu-img", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("qemu-img %v: %v\n%s", args, err, out)
	}
	return out
}

// QEMU's own tools find the images WriteQCOW2 makes clean and read them as
// written; and images qemu-img makes are detected as qemu-img says.
func TestQCOW2AgainstQemuImg(t *testing.T) {
	testenv.Integration(t)
	dir := t.TempDir()
	base := filepath.Join(dir, "base.raw")
	if err := os.WriteFile(base, bytes.Repeat([]byte{7}, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, o := range []storage.QCOW2Options{
		{Size: 16 << 20},
		{Size: 100 << 30},
		{Size: 1 << 20, BackingFile: base, BackingFormat: storage.FormatRaw},
	} {
		p := filepath.Join(dir, "img"+string(rune('a'+i))+".qcow2")
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		end, err := storage.WriteQCOW2(f, o)
		if err == nil {
			err = f.Truncate(end)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		qemuImg(t, "check", "-q", p)
		var info qemuImgInfo
		if err := json.Unmarshal(qemuImg(t, "info", "--output=json", p), &info); err != nil {
			t.Fatal(err)
		}
		want := qemuImgInfo{Format: "qcow2", VirtualSize: o.Size, BackingFilename: o.BackingFile, BackingFormat: string(o.BackingFormat)}
		if diff := cmp.Diff(want, info); diff != "" {
			t.Errorf("%+v: qemu-img info (-want +got):\n%s", o, diff)
		}
		if o.BackingFile != "" {
			// Reads fall through to the base; writes stay in the overlay.
			qemuImg(t, "convert", "-O", "raw", p, filepath.Join(dir, "flat.raw"))
			flat, _ := os.ReadFile(filepath.Join(dir, "flat.raw"))
			if !bytes.Equal(flat, bytes.Repeat([]byte{7}, 1<<20)) {
				t.Error("the overlay does not read through to its base")
			}
			qemuImg(t, "check", "-q", p)
		}
	}

	made := filepath.Join(dir, "made.qcow2")
	qemuImg(t, "create", "-q", "-f", "qcow2", "-F", "raw", "-b", base, made, "1M")
	got, err := storage.OSInspector{}.Inspect(context.Background(), made)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(made)
	if err != nil {
		t.Fatal(err)
	}
	want := storage.ImageInfo{Format: storage.FormatQCOW2, VirtualSize: 1 << 20, Length: st.Size(), BackingFile: base, BackingFormat: "raw"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("qemu-img's overlay (-want +got):\n%s", diff)
	}
	vmdk := filepath.Join(dir, "disk.img") // the name says nothing
	qemuImg(t, "create", "-q", "-f", "vmdk", vmdk, "1M")
	if got, err := (storage.OSInspector{}).Inspect(context.Background(), vmdk); err != nil || got.Detected != "vmdk" {
		t.Errorf("vmdk named disk.img: %+v, %v", got, err)
	}
}
