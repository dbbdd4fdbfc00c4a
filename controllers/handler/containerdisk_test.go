package handler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/confined"
	"github.com/virtkit/virtkit/virt/storage"
)

func TestContainerDiskFacts(t *testing.T) {
	layout := storage.Layout{ContainerDisksDir: "/cd"}
	tests := []struct {
		name    string
		files   []string // under the pod root
		src     virtv1.ContainerDiskSource
		want    string
		wantErr string
	}{
		{name: "the one file in /disk", files: []string{"cd/root/disk/fedora.qcow2"}, want: "/cd/root/disk/fedora.qcow2"},
		{name: "path chooses", files: []string{"cd/root/disk/a.img", "cd/root/disk/b.img"}, src: virtv1.ContainerDiskSource{Path: "/disk/b.img"}, want: "/cd/root/disk/b.img"},
		{name: "two files", files: []string{"cd/root/disk/a.img", "cd/root/disk/b.img"}, wantErr: "want exactly one disk file in /disk, found 2 [a.img b.img] (set path to choose)"},
		{name: "no /disk folder", files: []string{"cd/root/other"}, wantErr: "image example/guest:1: open"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for _, f := range tc.files {
				p := filepath.Join(root, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tc.src.Image = "example/guest:1"
			files, err := confined.Open(root, confined.InRoot)
			if err != nil {
				t.Fatal(err)
			}
			defer files.Close()
			got, err := containerDiskFacts(files, layout, "root", &tc.src)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(storage.VolumeFacts{Path: tc.want}, got); d != "" {
				t.Errorf("facts (-want +got):\n%s", d)
			}
		})
	}
}
