package contract

import (
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestArgsRoundTrip(t *testing.T) {
	for _, a := range []Args{
		{Source: SourceHTTP, URL: "https://example.com/disk.qcow2", Headers: []string{"X-A: 1", "X-B: two words"}, CertDir: CertsDir,
			Target: DataDir + "/" + DiskImage, Size: 1 << 30, Scratch: ScratchDir, OwnerUID: "uid-1", Checksum: "sha256:00"},
		{Source: SourceBlank, Target: BlockDevice, Block: true, Size: 64 << 20},
		{Source: SourceRegistry, URL: "docker://registry.example.com/guest:v1", CertDir: CertsDir, ProxyCertDir: ProxyCertsDir, InsecureRegistry: true, Architecture: "arm64",
			Target: DataDir + "/" + DiskImage, Size: 1 << 30, Scratch: ScratchDir},
		{Source: SourceFile, Path: SourceDir + "/" + DiskImage, Name: "claim ns/golden", Target: DataDir + "/" + DiskImage, Size: 1 << 30, Preallocate: true},
		{Source: SourceUpload, ClientName: "proxy", Target: DataDir + "/" + DiskImage, Size: 1 << 30, Scratch: ScratchDir},
		{Source: SourceSend, Path: SourceDir + "/" + DiskImage, URL: "https://10.88.0.7:8444", Name: "claim a/b"},
	} {
		got, err := Parse(a.Command()[1:], io.Discard)
		if err != nil {
			t.Fatalf("Parse(%q): %v", a.Command(), err)
		}
		if diff := cmp.Diff(a, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no source":           {[]string{"--target", "/data/disk.img", "--size", "1"}, `--source "": must be http, registry, file, upload, send or blank`},
		"registry, no scheme": {[]string{"--source", "registry", "--url", "quay.io/guest", "--target", "t", "--size", "1"}, `a registry source's must be docker://IMAGE`},
		"send, no url":        {[]string{"--source", "send", "--path", "/source/disk.img"}, "--path and --url: required"},
		"upload, no client":   {[]string{"--source", "upload", "--target", "t", "--size", "1"}, "--client-name: required"},
		"file, no path":       {[]string{"--source", "file", "--target", "t", "--size", "1"}, "--path: required"},
		"http, no url":        {[]string{"--source", "http", "--target", "t", "--size", "1"}, "--url: required"},
		"no target":           {[]string{"--source", "blank", "--size", "1"}, "--target: required"},
		"zero size":           {[]string{"--source", "blank", "--target", "t"}, "--size 0: must be positive"},
		"bad header":          {[]string{"--source", "blank", "--target", "t", "--size", "1", "--header", "novalue"}, `--header "novalue"`},
		"stray operand":       {[]string{"--source", "blank", "--target", "t", "--size", "1", "extra"}, "unexpected arguments"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(tc.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse(%q) = %v, want an error containing %q", tc.args, err, tc.want)
			}
		})
	}
}

func TestOutcome(t *testing.T) {
	o := Outcome{Message: strings.Repeat("é", 5000), Reason: "Corrupt", Fatal: true}
	b := o.Marshal()
	if len(b) > MaxTerminationMessage {
		t.Fatalf("marshalled outcome is %d bytes, want at most %d", len(b), MaxTerminationMessage)
	}
	got, err := ParseOutcome(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Fatal || got.Reason != "Corrupt" || !strings.HasSuffix(got.Message, "...") {
		t.Errorf("outcome after a cut: %+v", got)
	}
	if _, err := ParseOutcome("not json"); err == nil {
		t.Error("ParseOutcome of a plain message: no error")
	}
}

func TestSpace(t *testing.T) {
	for _, tc := range []struct {
		capacity, usable int64
	}{
		{1 << 30, 966 << 20}, // 1024 MiB / 1.06 = 966.04 MiB, aligned down
		{64 << 20, 60 << 20},
		{1 << 20, 0},
	} {
		if got := UsableSpace(tc.capacity, DefaultFilesystemOverhead); got != tc.usable {
			t.Errorf("UsableSpace(%d) = %d, want %d", tc.capacity, got, tc.usable)
		}
	}
	// A claim of the required size holds a disk of the requested size.
	for _, size := range []int64{1, 1 << 20, 100<<20 + 1, 1 << 30, 10 << 30} {
		req := RequiredSpace(size, DefaultFilesystemOverhead)
		if got := UsableSpace(req, DefaultFilesystemOverhead); got < size {
			t.Errorf("UsableSpace(RequiredSpace(%d) = %d) = %d, smaller than asked", size, req, got)
		}
	}
}

func TestAlignUp(t *testing.T) {
	for _, tc := range []struct{ size, want int64 }{
		{0, 0}, {1, 1 << 20}, {1 << 20, 1 << 20}, {1<<20 + 1, 2 << 20},
	} {
		if got := AlignUp(tc.size); got != tc.want {
			t.Errorf("AlignUp(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
}
