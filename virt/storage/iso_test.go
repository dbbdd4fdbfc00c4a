package storage_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtkit/virtkit/virt/storage"
)

// isoFiles reads an ISO 9660 image the way Linux's isofs does without Rock
// Ridge or Joliet (names in lower case, ";1" dropped), independently of the
// library that wrote it, checks its volume label, and returns its files.
func isoFiles(t *testing.T, path, label string) map[string]string {
	t.Helper()
	img, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const sector = 2048
	if len(img) < 17*sector {
		t.Fatalf("%s: %d bytes is too short for ISO 9660", path, len(img))
	}
	pvd := img[16*sector:]
	if pvd[0] != 1 || string(pvd[1:6]) != "CD001" {
		t.Fatalf("%s: no primary volume descriptor", path)
	}
	if space := int(binary.LittleEndian.Uint32(pvd[80:])) * sector; len(img)%sector != 0 || len(img) < space {
		t.Errorf("%s: %d bytes; want whole sectors and at least the declared volume of %d", path, len(img), space)
	}
	if got := strings.TrimRight(string(pvd[40:72]), " "); got != label {
		t.Errorf("%s: volume label %q, want %q", path, got, label)
	}
	files := map[string]string{}
	var walk func(prefix string, extent, length uint32, depth int)
	walk = func(prefix string, extent, length uint32, depth int) {
		if depth > 8 {
			t.Fatalf("%s: directories nested too deep", path)
		}
		start := int(extent) * sector
		for off := 0; off < int(length); {
			rec := img[start+off:]
			n := int(rec[0])
			if n == 0 { // the rest of this sector is padding
				off = (off/sector + 1) * sector
				continue
			}
			loc := binary.LittleEndian.Uint32(rec[2:])
			size := binary.LittleEndian.Uint32(rec[10:])
			flags := rec[25]
			id := string(rec[33 : 33+int(rec[32])])
			off += n
			if id == "\x00" || id == "\x01" {
				continue
			}
			name := strings.ToLower(strings.TrimSuffix(id, ";1"))
			name = strings.TrimSuffix(name, ".")
			if flags&2 != 0 {
				walk(prefix+name+"/", loc, size, depth+1)
				continue
			}
			files[prefix+name] = string(img[int(loc)*sector : int(loc)*sector+int(size)])
		}
	}
	root := pvd[156:]
	walk("", binary.LittleEndian.Uint32(root[2:]), binary.LittleEndian.Uint32(root[10:]), 0)
	return files
}

func TestWriteISO(t *testing.T) {
	want := map[string]string{
		"meta-data":                          "instance-id: a\n",
		"user-data":                          "#!/bin/sh\n",
		"network-config":                     "",
		"openstack/latest/meta_data.json":    `{"hostname":"h"}`,
		"openstack/latest/user_data":         strings.Repeat("x", 5000), // more than a sector
		"openstack/latest/network_data.json": "{}",
		"a/b/c/d/e/f/g/deep":                 "deep",
	}
	files := map[string][]byte{}
	for k, v := range want {
		files[k] = []byte(v)
	}
	p := t.TempDir() + "/x.iso"
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := storage.WriteISO(f, "config-2", files); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, isoFiles(t, p, "config-2")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// Names that plain ISO 9660 would mangle are refused, not mangled.
func TestWriteISORefusesManglableNames(t *testing.T) {
	for _, name := range []string{
		"User-Data", "a.b.c", "name.", "x.toolongext", "dir.d/file", "sp ace",
		strings.Repeat("n", 29), "a/b/c/d/e/f/g/h/deeper", "ünï",
	} {
		if err := storage.WriteISO(&bytes.Buffer{}, "cidata", map[string][]byte{name: nil}); err == nil {
			t.Errorf("%q accepted", name)
		}
	}
	for _, label := range []string{"has space", strings.Repeat("L", 33), "a.b"} {
		if err := storage.WriteISO(&bytes.Buffer{}, label, nil); err == nil {
			t.Errorf("label %q accepted", label)
		}
	}
	for _, name := range []string{strings.Repeat("n", 28), "ca.crt", "app-config.yaml", "x_y-z.ignition"} {
		if err := storage.WriteISO(&bytes.Buffer{}, "OEMDRV", map[string][]byte{name: nil}); err != nil {
			t.Errorf("%q refused: %v", name, err)
		}
	}
}

// Even a tiny cloud-init image is long enough for busybox findfs, which
// reads 0x11000 bytes from the start of a device and skips the device
// when that read is short (the guest then never finds "cidata").
func TestWriteISOPadded(t *testing.T) {
	var b bytes.Buffer
	if err := storage.WriteISO(&b, storage.NoCloudLabel, map[string][]byte{"meta-data": []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if b.Len() < 0x11000 || b.Len()%2048 != 0 {
		t.Errorf("a minimal ISO is %d bytes; want whole sectors and at least %d", b.Len(), 0x11000)
	}
}
