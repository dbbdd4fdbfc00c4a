package importertest

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtkit/virtkit/virt/storage"
	"github.com/virtkit/virtkit/virt/storage/importer"
)

// Harness is one importer.Interface under test and how the suite feeds it.
type Harness struct {
	// Importer is the implementation under test.
	Importer importer.Interface
	// Serve returns a Source whose bytes are image, named after name
	// (unique within a run). want is what importing it must give: an
	// implementation that reads no bytes scripts it, one that does ignores
	// it.
	Serve func(t *testing.T, name string, image []byte, want Want) importer.Source
	// Unreachable returns a Source that cannot be reached; want is as for
	// Serve.
	Unreachable func(t *testing.T, want Want) importer.Source

	Caps Capabilities
}

// Capabilities say what an implementation does beyond the calls' results.
type Capabilities struct {
	// WritesFiles: Import and Blank write Target.Path. The suite then reads
	// the disk back, checks that a failed import leaves no file, and that a
	// symbolic link at the path is refused and its target left alone.
	WritesFiles bool
}

// Want is what an import must give: Result, or with Reason an error of
// that Reason that wraps Is (when set).
type Want struct {
	Result importer.Result
	Reason importer.Reason
	Is     error
}

// Err is the error an implementation that reads no bytes returns for w
// from the source named source, or nil.
func (w Want) Err(source string) error {
	if w.Reason == "" {
		return nil
	}
	return &importer.Error{Reason: w.Reason, Source: source, Err: w.Is}
}

// targetSize is the suite's file targets' size: the disk fits.
const targetSize = 8 << 20

type importCase struct {
	name  string
	image func(t *testing.T) []byte
	size  int64 // the target's; targetSize if 0
	// noScratch gives the target no scratch space (Target.NoScratch).
	noScratch bool
	want      Want
}

func importCases(t *testing.T) []importCase {
	disk := Disk()
	gz := Gzip(t, disk)
	raw := func(comp string, transferred int) Want {
		return Want{Result: importer.Result{Format: importer.FormatRaw, Compression: comp, VirtualSize: DiskSize, Transferred: int64(transferred)}}
	}
	badCRC := func(t *testing.T) []byte {
		b := Gzip(t, disk)
		b[len(b)-8] ^= 0xff // the trailer's CRC-32
		return b
	}
	return []importCase{
		{name: "raw", image: func(*testing.T) []byte { return disk }, want: raw("", len(disk))},
		{name: "raw.gz", image: func(*testing.T) []byte { return gz }, want: raw(importer.CompressionGzip, len(gz))},
		{name: "raw.xz", image: func(t *testing.T) []byte { return XZ(t, disk) }, want: raw(importer.CompressionXZ, len(XZ(t, disk)))},
		{name: "exact-size", image: func(*testing.T) []byte { return disk }, size: DiskSize, want: raw("", len(disk))},
		// Streamed formats need no scratch space; others ask for it before
		// writing anything.
		{name: "raw.gz-no-scratch", image: func(*testing.T) []byte { return gz }, noScratch: true, want: raw(importer.CompressionGzip, len(gz))},
		{name: "qcow2-no-scratch", image: func(t *testing.T) []byte { return QCOW2(t, storage.QCOW2Options{Size: 1 << 20}) }, noScratch: true,
			want: Want{Reason: importer.ReasonScratchRequired}},
		{name: "raw-too-large", image: func(*testing.T) []byte { return disk }, size: 4 << 20,
			want: Want{Reason: importer.ReasonTooLarge, Is: storage.ErrImageTooLarge}},
		{name: "raw.gz-too-large", image: func(*testing.T) []byte { return gz }, size: 4 << 20,
			want: Want{Reason: importer.ReasonTooLarge, Is: storage.ErrImageTooLarge}},
		{name: "corrupt-gzip", image: badCRC, want: Want{Reason: importer.ReasonCorrupt}},
		{name: "truncated-xz", image: func(t *testing.T) []byte { b := XZ(t, disk); return b[:len(b)/2] }, want: Want{Reason: importer.ReasonCorrupt}},
		{name: "qcow2-too-large", image: func(t *testing.T) []byte { return QCOW2(t, storage.QCOW2Options{Size: 2 * targetSize}) },
			want: Want{Reason: importer.ReasonTooLarge, Is: storage.ErrImageTooLarge}},
		{name: "qcow2-backing-file", image: func(t *testing.T) []byte {
			return QCOW2(t, storage.QCOW2Options{Size: 1 << 20, BackingFile: "/etc/hostname", BackingFormat: storage.FormatRaw})
		}, want: Want{Reason: importer.ReasonUnsupportedFormat, Is: storage.ErrUnsafeImage}},
		{name: "qed", image: func(*testing.T) []byte { return append([]byte("QED\x00"), make([]byte, 4096)...) },
			want: Want{Reason: importer.ReasonUnsupportedFormat, Is: storage.ErrUnknownFormat}},
		{name: "vmdk-descriptor", image: func(*testing.T) []byte {
			return []byte("# Disk DescriptorFile\nversion=1\ncreateType=\"monolithicFlat\"\nRW 2048 FLAT \"/etc/hostname\" 0\n")
		}, want: Want{Reason: importer.ReasonUnsupportedFormat, Is: storage.ErrUnsafeImage}},
	}
}

// Run runs the contract against the Harness newHarness returns, one for
// the whole run.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	h := newHarness(t)
	dir := t.TempDir()
	for _, tc := range importCases(t) {
		t.Run("import/"+tc.name, func(t *testing.T) {
			size := tc.size
			if size == 0 {
				size = targetSize
			}
			src := h.Serve(t, tc.name, tc.image(t), tc.want)
			path := filepath.Join(dir, tc.name+".img")
			got, err := h.Importer.Import(context.Background(), src, importer.Target{Path: path, Size: size, ScratchDir: dir, NoScratch: tc.noScratch})
			if !checkErr(t, err, tc.want) {
				return
			}
			if tc.want.Reason != "" {
				if h.Caps.WritesFiles {
					checkAbsent(t, path)
				}
				return
			}
			if diff := cmp.Diff(tc.want.Result, got); diff != "" {
				t.Errorf("Result (-want +got):\n%s", diff)
			}
			if h.Caps.WritesFiles {
				CheckDisk(t, path, size)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		want := Want{Reason: importer.ReasonUnreachable}
		_, err := h.Importer.Import(context.Background(), h.Unreachable(t, want), importer.Target{Path: filepath.Join(dir, "unreachable.img"), Size: targetSize})
		if checkErr(t, err, want) && !importer.IsRetryable(err) {
			t.Errorf("IsRetryable(%v) = false", err)
		}
		if h.Caps.WritesFiles {
			checkAbsent(t, filepath.Join(dir, "unreachable.img"))
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		src := h.Serve(t, "cancelled", Disk(), Want{Result: importer.Result{Format: importer.FormatRaw, VirtualSize: DiskSize, Transferred: DiskSize}})
		path := filepath.Join(dir, "cancelled.img")
		_, err := h.Importer.Import(ctx, src, importer.Target{Path: path, Size: targetSize})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Import with a cancelled context: %v, want context.Canceled", err)
		}
		if importer.IsRetryable(err) {
			t.Errorf("IsRetryable(%v) = true for a cancelled import", err)
		}
		if h.Caps.WritesFiles {
			checkAbsent(t, path)
		}
	})
	t.Run("bad-target", func(t *testing.T) {
		src := h.Serve(t, "bad-target", Disk(), Want{Result: importer.Result{Format: importer.FormatRaw, VirtualSize: DiskSize, Transferred: DiskSize}})
		for name, dst := range map[string]importer.Target{
			"no path": {Size: targetSize},
			"no size": {Path: filepath.Join(dir, "no-size.img")},
		} {
			_, err := h.Importer.Import(context.Background(), src, dst)
			if got := importer.ReasonOf(err); got != importer.ReasonWrite {
				t.Errorf("%s: Import: %v (reason %q), want reason %q", name, err, got, importer.ReasonWrite)
			}
		}
	})
	if h.Caps.WritesFiles {
		t.Run("symlink-target", func(t *testing.T) {
			victim := filepath.Join(dir, "victim")
			if err := os.WriteFile(victim, []byte("not a disk"), 0o600); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(dir, "link.img")
			if err := os.Symlink(victim, link); err != nil {
				t.Fatal(err)
			}
			src := h.Serve(t, "symlink", Disk(), Want{Reason: importer.ReasonWrite})
			_, err := h.Importer.Import(context.Background(), src, importer.Target{Path: link, Size: targetSize})
			checkErr(t, err, Want{Reason: importer.ReasonWrite})
			if b, err := os.ReadFile(victim); err != nil || string(b) != "not a disk" {
				t.Errorf("the link's target after the import: %q, %v; want it untouched", b, err)
			}
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				t.Errorf("the link after the import: %v, %v; want it left", fi, err)
			}
		})
	}
	t.Run("blank", func(t *testing.T) {
		path := filepath.Join(dir, "blank.img")
		if err := h.Importer.Blank(context.Background(), importer.Target{Path: path, Size: targetSize}); err != nil {
			t.Fatalf("Blank: %v", err)
		}
		if h.Caps.WritesFiles {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) != targetSize || !allZero(b) {
				t.Errorf("blank disk: %d bytes, all zero %v; want %d zeros", len(b), allZero(b), targetSize)
			}
		}
		err := h.Importer.Blank(context.Background(), importer.Target{Path: path})
		if got := importer.ReasonOf(err); got != importer.ReasonWrite {
			t.Errorf("Blank without a size: %v, want reason %q", err, importer.ReasonWrite)
		}
	})
}

// checkErr checks err against want, reporting whether it matched.
func checkErr(t *testing.T, err error, want Want) bool {
	t.Helper()
	if want.Reason == "" {
		if err != nil {
			t.Errorf("Import: %v", err)
			return false
		}
		return true
	}
	var e *importer.Error
	if !errors.As(err, &e) || e.Reason != want.Reason {
		t.Errorf("Import: %v, want an *importer.Error of reason %q", err, want.Reason)
		return false
	}
	if want.Is != nil && !errors.Is(err, want.Is) {
		t.Errorf("Import: %v, want it to wrap %v", err, want.Is)
		return false
	}
	return true
}

func checkAbsent(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after a failed import, %s: %v; want nothing there", path, err)
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
