//go:build linux

package launcher

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/virt/libvirtd"
)

// With QEMU as a user of its own, the launcher folder goes to QEMU's group,
// mode 0770 with the sticky bit; without, it stays as it was.
func TestShareRoot(t *testing.T) {
	testenv.Integration(t) // gives a folder to another group: root, as every integration test
	for _, tc := range []struct {
		name     string
		as       *libvirtd.Owner
		group    uint32
		wantBits fs.FileMode
	}{
		{name: "QEMU as 107", as: &libvirtd.Owner{UID: 107, GID: 107}, group: 107, wantBits: fs.ModeSticky | 0o770},
		{name: "QEMU as root", group: 0, wantBits: 0o750},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "vmi")
			if err := os.Mkdir(root, 0o750); err != nil {
				t.Fatal(err)
			}
			if err := shareRoot(Config{Layout: Layout{Root: root}, Libvirtd: libvirtd.Config{QEMUAs: tc.as}}); err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(root)
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Mode() & (fs.ModePerm | fs.ModeSticky); got != tc.wantBits || st.Sys().(*syscall.Stat_t).Gid != tc.group {
				t.Errorf("folder %v, group %d; want %v, group %d", got, st.Sys().(*syscall.Stat_t).Gid, tc.wantBits, tc.group)
			}
		})
	}
}
