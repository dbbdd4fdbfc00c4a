package importer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtkit/virtkit/virt/storage"
)

// vmdkHeader is the start of a sparse VMDK of capacity sectors.
func vmdkHeader(capacity uint64) []byte {
	h := make([]byte, 4096)
	copy(h, "KDMV")
	binary.LittleEndian.PutUint32(h[4:], 1)
	binary.LittleEndian.PutUint64(h[12:], capacity)
	return h
}

// fakeQemu answers qemu-img info with a document and makes convert write
// what it is told into the target descriptor.
type fakeQemu struct {
	info     string
	convert  []byte
	failWith string // convert's error, when set

	mu    sync.Mutex
	calls [][]string
	files [][]string // the names of the files each call got
}

func (q *fakeQemu) Run(_ context.Context, cmd Command) ([]byte, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls = append(q.calls, append([]string{cmd.Path}, cmd.Args...))
	var names []string
	for _, f := range cmd.Files {
		names = append(names, filepath.Base(f.Name()))
	}
	q.files = append(q.files, names)
	switch cmd.Args[0] {
	case "info":
		return []byte(q.info), nil
	case "convert":
		if q.failWith != "" {
			return nil, errors.New(q.failWith)
		}
		_, err := cmd.Files[1].WriteAt(q.convert, 0)
		return nil, err
	}
	return nil, fmt.Errorf("unexpected %v", cmd.Args)
}

// The commands qemu-img runs with: the format never probed, the scratch
// file and the target passed open, a new file target not zeroed again.
func TestQemuImgCommands(t *testing.T) {
	for _, block := range []bool{false, true} {
		t.Run(fmt.Sprintf("block=%v", block), func(t *testing.T) {
			dir := t.TempDir()
			q := &fakeQemu{info: `{"virtual-size": 8388608, "format": "vmdk", "format-specific": {"type": "vmdk", "data": {"extents": [{"filename": "/dev/fd/3"}]}}}`, convert: []byte("converted")}
			path := filepath.Join(dir, "disk.img")
			if block {
				if err := os.WriteFile(path, make([]byte, 16<<20), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			im := New(WithRunner(q), WithQemuImg("/opt/qemu-img"))
			res, err := im.Import(context.Background(), bytesSource{"mem", vmdkHeader(16384)}, Target{Path: path, Block: block, Size: 16 << 20, ScratchDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(Result{Format: "vmdk", VirtualSize: 8 << 20, Transferred: 4096}, res); diff != "" {
				t.Errorf("Result (-want +got):\n%s", diff)
			}
			convert := []string{"/opt/qemu-img", "convert", "-t", "writeback", "-f", "vmdk", "-O", "raw", "-n", "--target-is-zero", "/dev/fd/3", "/dev/fd/4"}
			if block {
				convert = slicesDelete(convert, "--target-is-zero")
			}
			want := [][]string{{"/opt/qemu-img", "info", "--output=json", "-f", "vmdk", "/dev/fd/3"}, convert}
			if diff := cmp.Diff(want, q.calls); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
			if len(q.files) != 2 || len(q.files[1]) != 2 || q.files[1][1] != "disk.img" || !strings.HasPrefix(q.files[1][0], ".virtkit-import-") {
				t.Errorf("files passed: %v", q.files)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(got)) != 16<<20 || !bytes.HasPrefix(got, []byte("converted")) {
				t.Errorf("target: %d bytes starting %q", len(got), got[:9])
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".virtkit-import-*")); len(left) > 0 {
				t.Errorf("scratch files left: %v", left)
			}
		})
	}
}

func slicesDelete(s []string, v string) []string {
	var out []string
	for _, e := range s {
		if e != v {
			out = append(out, e)
		}
	}
	return out
}

// What qemu-img info says or a failed convert is turned into a reason, and
// nothing is left behind.
func TestQemuImgOutcomes(t *testing.T) {
	const ok = `{"virtual-size": 8388608, "format": "vmdk"}`
	for _, tc := range []struct {
		name     string
		image    []byte
		info     string
		failWith string
		reason   Reason
		is       error
		converts bool
	}{
		{name: "backing file", image: vmdkHeader(16384), info: `{"virtual-size": 8388608, "format": "vmdk", "backing-filename": "/etc/shadow"}`,
			reason: ReasonUnsupportedFormat, is: storage.ErrUnsafeImage},
		{name: "extent elsewhere", image: vmdkHeader(16384), info: `{"virtual-size": 8388608, "format": "vmdk", "format-specific": {"type": "vmdk", "data": {"extents": [{"filename": "/dev/fd/3"}, {"filename": "/etc/shadow"}]}}}`,
			reason: ReasonUnsupportedFormat, is: storage.ErrUnsafeImage},
		{name: "data file", image: vmdkHeader(16384), info: `{"virtual-size": 8388608, "format": "vmdk", "format-specific": {"type": "qcow2", "data": {"data-file": "/etc/shadow"}}}`,
			reason: ReasonUnsupportedFormat, is: storage.ErrUnsafeImage},
		{name: "other format", image: vmdkHeader(16384), info: `{"virtual-size": 8388608, "format": "raw"}`, reason: ReasonCorrupt},
		{name: "not json", image: vmdkHeader(16384), info: `qemu-img: oops`, reason: ReasonCorrupt},
		{name: "too large", image: vmdkHeader(16384), info: `{"virtual-size": 16777217, "format": "vmdk"}`,
			reason: ReasonTooLarge, is: storage.ErrImageTooLarge},
		{name: "capacity 0", image: vmdkHeader(0), info: ok, reason: ReasonUnsupportedFormat, is: storage.ErrUnsafeImage},
		{name: "no space", image: vmdkHeader(16384), info: ok, failWith: "qemu-img: error while writing at byte 0: No space left on device",
			reason: ReasonWrite, converts: true},
		{name: "unreadable", image: vmdkHeader(16384), info: ok, failWith: "qemu-img: error while reading at byte 512: Invalid argument",
			reason: ReasonCorrupt, converts: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			q := &fakeQemu{info: tc.info, failWith: tc.failWith}
			path := filepath.Join(dir, "disk.img")
			_, err := New(WithRunner(q)).Import(context.Background(), bytesSource{"mem", tc.image}, Target{Path: path, Size: 16 << 20, ScratchDir: dir})
			if ReasonOf(err) != tc.reason || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("Import: %v, want reason %q wrapping %v", err, tc.reason, tc.is)
			}
			converted := false
			for _, c := range q.calls {
				converted = converted || c[1] == "convert"
			}
			if converted != tc.converts {
				t.Errorf("convert ran: %v, want %v (calls %v)", converted, tc.converts, q.calls)
			}
			if left, _ := os.ReadDir(dir); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}
