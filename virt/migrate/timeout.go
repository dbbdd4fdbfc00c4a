package migrate

import (
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

// DataSize is how many bytes a migration of vmi moves, as KubeVirt counts
// them for the completion timeout: the guest's memory
// (spec.domain.memory.guest, else spec.domain.resources.requests.memory)
// plus localDiskBytes, the size of the disk images copied along because
// the destination cannot reach them (a block migration; only the node
// knows their size, so the caller passes it; zero for shared storage).
func DataSize(vmi *virtv1.VirtualMachineInstance, localDiskBytes int64) int64 {
	var mem int64
	if vmi != nil {
		d := vmi.Spec.Domain
		if q, ok := d.Resources.Requests[corev1.ResourceMemory]; ok {
			mem = q.Value()
		}
		if d.Memory != nil && d.Memory.Guest != nil {
			mem = d.Memory.Guest.Value()
		}
	}
	return max(0, mem) + max(0, localDiskBytes)
}

// CompletionTimeout is how long a migration moving dataBytes may take:
// CompletionTimeoutPerGiB for each started GB. KubeVirt counts the data in
// units of 10^9 bytes, rounded up, although the setting says GiB: a 2 GiB
// guest counts as 3, a 256 MiB one as 1. Zero (no timeout) when either the
// setting or the data is zero.
func (c Config) CompletionTimeout(dataBytes int64) time.Duration {
	if dataBytes <= 0 || c.CompletionTimeoutPerGiB <= 0 {
		return 0
	}
	const gb = 1_000_000_000
	units := (dataBytes + gb - 1) / gb
	if units > math.MaxInt64/int64(c.CompletionTimeoutPerGiB) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(units) * c.CompletionTimeoutPerGiB
}

// BandwidthMiB is BandwidthPerMigration in MiB/s, the unit libvirt takes:
// rounded to the nearest MiB, at least 1 for any limit, zero for none (as
// KubeVirt converts it).
func (c Config) BandwidthMiB() uint64 {
	if c.BandwidthPerMigration <= 0 {
		return 0
	}
	const mib = 1 << 20
	return max(1, (uint64(c.BandwidthPerMigration)+mib/2)/mib)
}
