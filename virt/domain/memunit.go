package domain

import "strings"

// MemoryBytes converts a libvirt memory amount (a value and its unit
// attribute, as in <memory unit="KiB">) to bytes. libvirt's default unit,
// and that of an unknown one, is KiB; "KB", "MB"... are powers of 1000.
func MemoryBytes(v uint, unit string) uint64 {
	n := uint64(v)
	switch strings.ToLower(unit) {
	case "b", "bytes":
		return n
	case "kb":
		return n * 1000
	case "mb":
		return n * 1000 * 1000
	case "m", "mib":
		return n << 20
	case "gb":
		return n * 1000 * 1000 * 1000
	case "g", "gib":
		return n << 30
	case "tb":
		return n * 1000 * 1000 * 1000 * 1000
	case "t", "tib":
		return n << 40
	}
	return n << 10
}
