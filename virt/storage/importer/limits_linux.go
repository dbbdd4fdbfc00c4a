//go:build linux

package importer

import (
	"syscall"
	"unsafe"
)

// setLimits applies l to the running process pid with prlimit(2) (through
// syscall: this package stays free of golang.org/x/sys).
func setLimits(pid int, l Limits) error {
	for _, r := range []struct {
		res int
		v   uint64
	}{{syscall.RLIMIT_AS, l.AddressSpace}, {syscall.RLIMIT_CPU, l.CPUSeconds}} {
		if r.v == 0 {
			continue
		}
		lim := syscall.Rlimit{Cur: r.v, Max: r.v}
		if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(r.res), uintptr(unsafe.Pointer(&lim)), 0, 0, 0); errno != 0 {
			return errno
		}
	}
	return nil
}
