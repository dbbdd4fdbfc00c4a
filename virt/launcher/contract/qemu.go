package contract

// The user and group a launcher runs QEMU as: KubeVirt's qemu user, whose
// ID its images use too (a containerDisk's disk is 107:107, mode 0440).
// What QEMU must create or connect to in a launcher folder (the folder
// itself, the migration sockets' folder and the sockets the handler
// listens on) belongs to QEMUGroup and is group-writable.
const (
	QEMUUser  = 107
	QEMUGroup = 107
)
