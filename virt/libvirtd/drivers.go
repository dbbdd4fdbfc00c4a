package libvirtd

import (
	"fmt"
	"os"
	"path/filepath"
)

// systemDriverDirs are where distributions install libvirt's connection
// driver modules (Debian's multiarch folder first).
var systemDriverDirs = []string{
	"/usr/lib/x86_64-linux-gnu/libvirt/connection-driver",
	"/usr/lib/aarch64-linux-gnu/libvirt/connection-driver",
	"/usr/lib64/libvirt/connection-driver",
	"/usr/lib/libvirt/connection-driver",
}

// linkDrivers fills dir with links to the named driver modules and returns
// the environment that makes libvirtd load its drivers from there
// (LIBVIRT_DRIVER_DIR; libvirtd skips drivers it does not find). For
// AllDrivers it links nothing and returns no environment.
func linkDrivers(drivers []string, dir string) ([]string, error) {
	if len(drivers) == 1 && drivers[0] == AllDrivers {
		return nil, nil
	}
	var src string
	for _, d := range systemDriverDirs {
		if _, err := os.Stat(filepath.Join(d, "libvirt_driver_qemu.so")); err == nil {
			src = d
			break
		}
	}
	if src == "" {
		return nil, fmt.Errorf("libvirtd: no libvirt driver folder with libvirt_driver_qemu.so in %v (Debian package libvirt-daemon-driver-qemu; run 'make deps')", systemDriverDirs)
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("libvirtd: %w", err)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("libvirtd: %w", err)
	}
	for _, d := range drivers {
		name := "libvirt_driver_" + d + ".so"
		target := filepath.Join(src, name)
		if _, err := os.Stat(target); err != nil {
			return nil, fmt.Errorf("libvirtd: Config.Drivers: driver %q is not installed (%s)", d, target)
		}
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			return nil, fmt.Errorf("libvirtd: %w", err)
		}
	}
	return []string{"LIBVIRT_DRIVER_DIR=" + dir}, nil
}
