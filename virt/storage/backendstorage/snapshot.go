package backendstorage

import (
	"fmt"
	"hash/fnv"
)

// maxVolumeName is the longest volume name: a DNS-1035 label.
const maxVolumeName = 63

// SnapshotVolumeName is the name that stands for VM vm's backend-storage
// claim among the volumes of a snapshot (status.snapshotVolumes, the
// content's volumeBackups) and a restore (status.restores), where the VM's
// spec names no volume for it. It is KubeVirt's: Prefix-vm, and when that
// is longer than a DNS-1035 label, shortened with an FNV-1a hash of the
// whole as KubeVirt shortens it.
func SnapshotVolumeName(vm string) string {
	name := Prefix + "-" + vm
	if len(name) <= maxVolumeName {
		return name
	}
	keep := maxVolumeName - len("-01234567-") - len(vm)
	if keep <= 0 {
		// The VM's name is too long to keep: the prefix and a hash of the whole.
		return Prefix + "-" + fnvHex(name)
	}
	return Prefix[:keep] + "-" + fnvHex(Prefix) + "-" + vm
}

// fnvHex is the 32-bit FNV-1a hash of s, as 8 hex digits.
func fnvHex(s string) string {
	h := fnv.New32a()
	h.Write([]byte(s))
	return fmt.Sprintf("%08x", h.Sum32())
}
