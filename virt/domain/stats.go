package domain

import "time"

// Stats are a domain's resource counters at one moment. Counters are
// cumulative since the domain started; a counter the hypervisor does not
// report (no balloon driver in the guest, a shut-off domain) is zero.
type Stats struct {
	// Domain is the domain's name.
	Domain string
	// State is the domain's state when the counters were read.
	State State
	// CPUTime is the guest's total CPU time, all vCPUs together.
	CPUTime time.Duration
	// CPUUser and CPUSystem are the hypervisor process's CPU time in user
	// and in kernel mode (vCPUs and emulator threads together).
	CPUUser, CPUSystem time.Duration
	// Memory is what the guest has and uses.
	Memory MemoryStats
	// Blocks has one entry per disk, in the domain document's order.
	Blocks []BlockStats
	// Interfaces has one entry per network interface, in the document's order.
	Interfaces []InterfaceStats
}

// MemoryStats are in KiB, as libvirt reports them.
type MemoryStats struct {
	// ActualKiB is the memory the guest currently has (the balloon's size).
	ActualKiB uint64
	// MaximumKiB is the domain's memory (the document's memory element).
	MaximumKiB uint64
	// RSSKiB is the resident memory of the hypervisor process on the host.
	RSSKiB uint64
	// AvailableKiB, UsableKiB and UnusedKiB are the guest's own view
	// (MemTotal, MemAvailable and MemFree), reported only by a guest running
	// a balloon driver with statistics enabled.
	AvailableKiB, UsableKiB, UnusedKiB uint64
}

// BlockStats are the I/O counters of one disk.
type BlockStats struct {
	// Name is the disk's target device (vda, sdb, ...); Path its source, if a file or block device.
	Name, Path string
	// ReadBytes, ReadRequests, WriteBytes, WriteRequests and FlushRequests count since start.
	ReadBytes, ReadRequests, WriteBytes, WriteRequests, FlushRequests uint64
	// ReadTime, WriteTime and FlushTime are the time spent on each kind of request.
	ReadTime, WriteTime, FlushTime time.Duration
}

// InterfaceStats are the traffic counters of one network interface, as the
// host sees them (RX is what the guest received).
type InterfaceStats struct {
	// Name is the host-side device (tap0, vnet1, ...).
	Name                                   string
	RxBytes, RxPackets, TxBytes, TxPackets uint64
	// RxErrors, RxDrops, TxErrors and TxDrops count packets in error and dropped.
	RxErrors, RxDrops, TxErrors, TxDrops uint64
}
