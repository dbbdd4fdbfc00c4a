package handler_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"

	"github.com/virtkit/virtkit/controllers/handler"
	"github.com/virtkit/virtkit/internal/linuxproc"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// NodeBinder on the real kernel: the claim's image is bound onto a file of
// the launcher pod's hotplug folder (the same inode, writes go through),
// once; a missing image is made sparse and owned by the QEMU user; links
// in the claim or planted in the pod's folder are refused; Unbind leaves
// neither mount nor file, and a pod folder that is gone has nothing to
// unbind.
func TestNodeBinder(t *testing.T) {
	testenv.Integration(t)
	ctx := context.Background()
	dir := testenv.Dir(t)
	pods := filepath.Join(dir, "pods")
	hot := contract.EmptyDir(pods, "launcher-uid", contract.HotplugVolume)
	assert.NilError(t, os.MkdirAll(hot, 0o777))
	claim := filepath.Join(dir, "claim")
	assert.NilError(t, os.MkdirAll(claim, 0o755))
	b := handler.NodeBinder{PodsDir: pods}

	bd := handler.Binding{Launcher: "launcher-uid", Volume: "data", Source: claim, CreateBytes: 64 << 20}
	assert.NilError(t, b.Bind(ctx, bd))
	t.Cleanup(func() { _ = b.Unbind(ctx, "launcher-uid", "") })
	var src, dst unix.Stat_t
	assert.NilError(t, unix.Stat(filepath.Join(claim, "disk.img"), &src))
	assert.NilError(t, unix.Stat(filepath.Join(hot, "data.img"), &dst))
	assert.Equal(t, src.Ino, dst.Ino, "not the claim's image")
	assert.Equal(t, src.Size, int64(64<<20))
	assert.Equal(t, src.Uid, uint32(contract.QEMUUser))
	assert.Assert(t, src.Blocks == 0, "not sparse: %d blocks", src.Blocks)
	assert.NilError(t, os.WriteFile(filepath.Join(hot, "data.img"), []byte("through"), 0o600))
	got, err := os.ReadFile(filepath.Join(claim, "disk.img"))
	assert.NilError(t, err)
	assert.Equal(t, string(got[:7]), "through")
	assert.NilError(t, b.Bind(ctx, bd), "a second bind")
	assert.Equal(t, mountsAt(t, filepath.Join(hot, "data.img")), 1)

	// Read-only, from an image that is there.
	ro := filepath.Join(dir, "ro-claim")
	assert.NilError(t, os.MkdirAll(ro, 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(ro, "disk.img"), make([]byte, 1<<20), 0o644))
	assert.NilError(t, b.Bind(ctx, handler.Binding{Launcher: "launcher-uid", Volume: "ro", Source: ro, ReadOnly: true}))
	err = os.WriteFile(filepath.Join(hot, "ro.img"), []byte("x"), 0o600)
	assert.Assert(t, errors.Is(err, unix.EROFS), "wrote to a read-only image: %v", err)

	// A link as the claim's image, and one planted in the pod's folder.
	evil := filepath.Join(dir, "evil-claim")
	assert.NilError(t, os.MkdirAll(evil, 0o755))
	assert.NilError(t, os.Symlink("/etc/hostname", filepath.Join(evil, "disk.img")))
	assert.Assert(t, b.Bind(ctx, handler.Binding{Launcher: "launcher-uid", Volume: "evil", Source: evil}) != nil, "bound a link")
	assert.NilError(t, os.Symlink("/etc/hostname", filepath.Join(hot, "planted.img")))
	assert.Assert(t, b.Bind(ctx, handler.Binding{Launcher: "launcher-uid", Volume: "planted", Source: ro}) != nil, "bound onto a link")
	assert.Equal(t, mountsAt(t, "/etc/hostname"), 0)

	assert.NilError(t, b.Unbind(ctx, "launcher-uid", "data"))
	assert.Equal(t, mountsAt(t, filepath.Join(hot, "data.img")), 0)
	_, err = os.Lstat(filepath.Join(hot, "data.img"))
	assert.Assert(t, os.IsNotExist(err), "the file is left: %v", err)
	assert.NilError(t, b.Unbind(ctx, "launcher-uid", ""))
	assert.Equal(t, mountsAt(t, filepath.Join(hot, "ro.img")), 0)
	assert.NilError(t, b.Unbind(ctx, "gone-uid", "data"), "a pod folder that is gone")
	got, err = os.ReadFile(filepath.Join(claim, "disk.img"))
	assert.NilError(t, err)
	assert.Equal(t, string(got[:7]), "through", "the claim's image after unbinding")
}

// mountsAt counts the mounts at path in this process's namespace.
func mountsAt(t *testing.T, path string) int {
	t.Helper()
	mounts, err := linuxproc.ReadMounts("/proc/self/mountinfo")
	assert.NilError(t, err)
	n := 0
	for _, m := range mounts {
		if m.MountPoint == path {
			n++
		}
	}
	return n
}

// A Block claim's device: a node of its number in the launcher pod's
// hotplug folder, owned by the QEMU user (0440 when read-only), made once;
// another node or a link planted under its name is refused; Unbind removes
// it, and Unbind of everything removes device nodes too.
func TestNodeBinderDevice(t *testing.T) {
	testenv.Integration(t)
	ctx := context.Background()
	pods := filepath.Join(testenv.Dir(t), "pods")
	hot := contract.EmptyDir(pods, "launcher-uid", contract.HotplugVolume)
	assert.NilError(t, os.MkdirAll(hot, 0o777))
	b := handler.NodeBinder{PodsDir: pods}
	loop0, loop1 := unix.Mkdev(7, 0), unix.Mkdev(7, 1)

	bd := handler.Binding{Launcher: "launcher-uid", Volume: "blk", Device: loop0}
	assert.NilError(t, b.Bind(ctx, bd))
	t.Cleanup(func() { _ = b.Unbind(ctx, "launcher-uid", "") })
	assert.NilError(t, b.Bind(ctx, bd), "a second bind")
	var st unix.Stat_t
	assert.NilError(t, unix.Lstat(filepath.Join(hot, "blk"), &st))
	assert.Equal(t, st.Mode, uint32(unix.S_IFBLK|0o660))
	assert.Equal(t, st.Rdev, loop0)
	assert.Equal(t, st.Uid, uint32(contract.QEMUUser))
	assert.Equal(t, st.Gid, uint32(contract.QEMUGroup))
	assert.ErrorContains(t, b.Bind(ctx, handler.Binding{Launcher: "launcher-uid", Volume: "blk", Device: loop1}), "not the claim's device")

	assert.NilError(t, b.Bind(ctx, handler.Binding{Launcher: "launcher-uid", Volume: "ro", Device: loop1, ReadOnly: true}))
	assert.NilError(t, unix.Lstat(filepath.Join(hot, "ro"), &st))
	assert.Equal(t, st.Mode, uint32(unix.S_IFBLK|0o440))

	assert.NilError(t, os.Symlink("/dev/loop0", filepath.Join(hot, "planted")))
	assert.ErrorContains(t, b.Bind(ctx, handler.Binding{Launcher: "launcher-uid", Volume: "planted", Device: loop0}), "not the claim's device")

	assert.NilError(t, b.Unbind(ctx, "launcher-uid", "blk"))
	_, err := os.Lstat(filepath.Join(hot, "blk"))
	assert.Assert(t, os.IsNotExist(err), "the node is left: %v", err)
	assert.NilError(t, b.Unbind(ctx, "launcher-uid", ""))
	_, err = os.Lstat(filepath.Join(hot, "ro"))
	assert.Assert(t, os.IsNotExist(err), "the read-only node is left: %v", err)
}
