package spec

import (
	"crypto/sha1" //nolint:gosec // UUIDv5 is defined over SHA-1; this is naming, not security.
	"encoding/hex"

	"k8s.io/apimachinery/pkg/types"
)

// firmwareUUIDNamespace is the UUIDv5 namespace of firmware UUIDs. It is the
// namespace KubeVirt's VM controller uses for the same purpose
// (6a1a24a1-4061-4607-8bf4-a3963d0c5895), kept so the constant has one origin.
const firmwareUUIDNamespace = "\x6a\x1a\x24\xa1\x40\x61\x46\x07\x8b\xf4\xa3\x96\x3d\x0c\x58\x95"

// FirmwareUUID returns the stable firmware (SMBIOS system) UUID of the VMI
// namespace/name: a UUIDv5 (RFC 9562, SHA-1) of "namespace/name" in a fixed
// namespace. A guest keeps its identity across restarts and re-creations of
// its VMI, and two VMs of the same name in different namespaces differ.
// KubeVirt hashes the name alone; virtkit adds the namespace for that reason.
func FirmwareUUID(namespace, name string) types.UID {
	h := sha1.New() //nolint:gosec // see import comment
	h.Write([]byte(firmwareUUIDNamespace))
	h.Write([]byte(namespace))
	h.Write([]byte{'/'})
	h.Write([]byte(name))
	var sum [sha1.Size]byte
	u := h.Sum(sum[:0])[:16]
	u[6] = (u[6] & 0x0f) | 0x50 // version 5
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
	var buf [36]byte
	hex.Encode(buf[0:8], u[0:4])
	buf[8] = '-'
	hex.Encode(buf[9:13], u[4:6])
	buf[13] = '-'
	hex.Encode(buf[14:18], u[6:8])
	buf[18] = '-'
	hex.Encode(buf[19:23], u[8:10])
	buf[23] = '-'
	hex.Encode(buf[24:], u[10:16])
	return types.UID(buf[:])
}

// isUUID reports whether s has the canonical 8-4-4-4-12 hex form libvirt accepts.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isHex(c) {
				return false
			}
		}
	}
	return true
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
