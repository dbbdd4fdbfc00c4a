package contract

// Binary is the launcher's executable (daemons/virt-launcher) in the
// launcher image.
const Binary = "virt-launcher"

// Flags of the launcher binary, without their leading "--".
const (
	// FlagDir is the per-VMI folder shared with the handler.
	FlagDir = "dir"
	// FlagNamespace and FlagName are the VMI's namespace and name.
	FlagNamespace = "namespace"
	FlagName      = "name"
	// FlagGracePeriod bounds a graceful shutdown on SIGTERM before the
	// guest is destroyed (a Go duration, "30s").
	FlagGracePeriod = "grace-period"
	// FlagLibvirtCacheDir is a folder for QEMU capability probes shared
	// between launchers.
	FlagLibvirtCacheDir = "libvirt-cache-dir"
	// CapabilitiesCachePath is where a launcher pod sees the node's shared
	// capability cache, the FlagLibvirtCacheDir it is given.
	CapabilitiesCachePath = "/var/cache/virtkit/libvirt"
	// FlagLibvirtConfigDir is a short, private, writable folder for the
	// configuration and per-guest state of a launcher's session libvirtd
	// (one that is not root), whose sockets would not fit below a deep
	// FlagDir (libvirtd.Config.ConfigDir).
	FlagLibvirtConfigDir = "libvirt-config-dir"
)
