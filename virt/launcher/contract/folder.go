package contract

// Names of the entries of a launcher's per-VMI folder, relative to its root
// (launcher.Layout.Root).
const (
	// LibvirtDir is the private libvirtd's instance folder (virt/libvirtd).
	LibvirtDir = "libvirt"
	// SerialSocket is the unix socket of the domain's first serial console
	// (created by QEMU).
	SerialSocket = "serial0"
	// SerialLog holds everything the first serial console printed.
	SerialLog = "serial0.log"
	// VNCSocket is the unix socket of the domain's VNC server (created by QEMU).
	VNCSocket = "vnc"
	// ReadyFile exists while the launcher accepts a domain; the launcher
	// pod's readiness probe checks it.
	ReadyFile = "ready"
	// ExitFile holds the launcher's result (JSON) once it has ended.
	ExitFile = "exit"
)
