package main

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"gotest.tools/v3/assert"

	"github.com/virtkit/virtkit/deploy/images"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/local/registry"
)

// The launcher image built again from the same binaries and packages has
// the digest `make images` gave it, and holds a libvirtd and a QEMU (with
// its TCG accelerator module) that run from the image's files alone.
func TestLauncherImageIsReproducibleAndSelfContained(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an image from Debian packages")
	}
	if os.Geteuid() != 0 {
		t.Fatal("needs root, to run the image's programs under chroot")
	}
	made := testenv.Output(t, "images")
	want := imageIn(t, made, "virt-launcher:devel")

	out := filepath.Join(t.TempDir(), "images")
	assert.NilError(t, build(context.Background(), testenv.Output(t, "bin"), out,
		testenv.Output(t, "cache", "debs"), "", "devel", "virt-launcher"))
	got := imageIn(t, out, "virt-launcher:devel")
	wantDigest, err := want.Digest()
	assert.NilError(t, err)
	gotDigest, err := got.Digest()
	assert.NilError(t, err)
	assert.Equal(t, gotDigest, wantDigest, "two builds of the launcher image from the same inputs")

	root := t.TempDir()
	extract(t, got, root)
	for _, tc := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"/usr/sbin/libvirtd", "--version"}, "", "libvirtd (libvirt)"},
		{[]string{"/usr/bin/qemu-system-x86_64", "-version"}, "", "QEMU emulator version"},
		// The TCG accelerator is a module: without it "-accel tcg" fails
		// before the monitor answers.
		{[]string{"/usr/bin/qemu-system-x86_64", "-accel", "tcg", "-machine", "none", "-nodefaults", "-display", "none", "-monitor", "stdio"},
			"info status\nquit\n", "VM status: running"},
		{[]string{"/bin/sh", "-c", "mkdir -p /tmp/a /tmp/b && mount --version"}, "", "mount from util-linux"},
		{[]string{"/usr/bin/virt-launcher", "-h"}, "", "-libvirtd"},
	} {
		t.Run(filepath.Base(tc.args[0]), func(t *testing.T) {
			out := chroot(t, root, tc.stdin, tc.args...)
			assert.Assert(t, strings.Contains(out, tc.want), "%v: want %q in:\n%s", tc.args, tc.want, out)
		})
	}
}

// imageIn returns the image of layout dir whose reference name is ref.
func imageIn(t *testing.T, dir, ref string) v1.Image {
	t.Helper()
	img, err := images.FromLayout(dir, ref)
	assert.NilError(t, err, "run 'make images' first")
	return img
}

// extract writes img's files below root. No entry may reach outside root:
// a path through a symbolic link, or a hard link to one, is refused.
func extract(t *testing.T, img v1.Image, root string) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		assert.NilError(t, err)
		name := filepath.Clean("/" + h.Name)
		if name == "/" {
			continue
		}
		assert.NilError(t, noLinkOnTheWay(root, filepath.Dir(name)), h.Name)
		dst := filepath.Join(root, name)
		mode := os.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.Mkdir(dst, mode); err != nil && !errors.Is(err, os.ErrExist) {
				t.Fatal(err)
			}
		case tar.TypeReg:
			f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, mode)
			assert.NilError(t, err)
			_, err = io.Copy(f, tr)
			assert.NilError(t, errors.Join(err, f.Close()))
		case tar.TypeSymlink:
			assert.NilError(t, os.Symlink(h.Linkname, dst))
		case tar.TypeLink:
			target := filepath.Clean("/" + h.Linkname)
			assert.NilError(t, noLinkOnTheWay(root, target), h.Linkname)
			assert.NilError(t, os.Link(filepath.Join(root, target), dst))
		default:
			t.Fatalf("%s: unexpected entry type %q", h.Name, h.Typeflag)
		}
	}
}

// noLinkOnTheWay fails when a folder of rel (below root) is a symbolic link.
func noLinkOnTheWay(root, rel string) error {
	p := root
	for _, part := range strings.Split(strings.Trim(rel, "/"), "/") {
		if part == "" {
			continue
		}
		p = filepath.Join(p, part)
		st, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if st.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%s: a symbolic link on the way", p)
		}
	}
	return nil
}

// chroot runs args with root as its root folder, with nothing of the host
// but /proc and /dev (QEMU reads both), and returns its combined output.
func chroot(t *testing.T, root, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	script := `set -e; mkdir -p "$1/proc" "$1/dev"; mount -t proc proc "$1/proc"; mount --rbind /dev "$1/dev"; root=$1; shift; exec chroot "$root" "$@"`
	cmd := exec.CommandContext(ctx, "unshare", append([]string{"--mount", "--propagation", "private", "/bin/sh", "-c", script, "chroot", root}, args...)...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	assert.NilError(t, err, "%v:\n%s", args, out)
	return string(out)
}

// -push sends the images to a registry such as virt-local's, from which a
// client pulls the same digest.
func TestPushToTheLocalRegistry(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an image from Debian packages")
	}
	ctx := context.Background()
	r, err := registry.Start(ctx, registry.Config{Dir: filepath.Join(t.TempDir(), "registry"), Addr: "127.0.0.1:0"})
	assert.NilError(t, err)
	defer r.Stop(ctx)

	out := filepath.Join(t.TempDir(), "images")
	prefix := r.Addr() + "/virtkit"
	assert.NilError(t, build(ctx, testenv.Output(t, "bin"), out, testenv.Output(t, "cache", "debs"), prefix, "t1", "virt-api"))
	built, err := imageIn(t, out, "virt-api:t1").Digest()
	assert.NilError(t, err)

	ref, err := name.ParseReference(prefix+"/virt-api:t1", name.Insecure)
	assert.NilError(t, err)
	desc, err := remote.Head(ref, remote.WithContext(ctx))
	assert.NilError(t, err)
	assert.Equal(t, desc.Digest, built)
}

func TestLoopback(t *testing.T) {
	for ref, want := range map[string]bool{
		"127.0.0.1:5000/virtkit/virt-api:devel": true,
		"localhost/virt-api":                    true,
		"[::1]:5000/x":                          true,
		"quay.io/virtkit/virt-api":              false,
		"10.0.0.1:5000/x":                       false,
	} {
		assert.Equal(t, loopback(ref), want, ref)
	}
}
