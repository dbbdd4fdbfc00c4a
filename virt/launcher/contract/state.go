package contract

// Where a launcher pod keeps what its guest may need across restarts: the
// session libvirtd's configuration folder, which launcher pods get as an
// emptyDir and pass as FlagLibvirtConfigDir, and libvirt's folders in it
// (virt/libvirtd's Paths of a session daemon with that ConfigDir). A VMI
// with backend storage (virt/storage/backendstorage) gets its claim's
// folders mounted over the last three, so what libvirt writes there
// outlives the pod.
const (
	// LibvirtConfigDir is the launcher's FlagLibvirtConfigDir in its pod.
	LibvirtConfigDir = "/var/run/libvirt"
	// SwtpmDir holds each domain's vTPM state, <uuid>/tpm2.
	SwtpmDir = LibvirtConfigDir + "/libvirt/qemu/swtpm"
	// SwtpmLocalCADir holds the local CA that signs the vTPM's endorsement
	// key certificate.
	SwtpmLocalCADir = LibvirtConfigDir + "/swtpm-localca"
	// NVRAMDir holds the EFI variable stores, <vmi>_VARS.fd (domain.Paths
	// NVRAMDir).
	NVRAMDir = LibvirtConfigDir + "/libvirt/qemu/nvram"
)
