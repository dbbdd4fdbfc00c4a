package images

// Image describes one container image: what Build puts in it. It is plain
// data.
type Image struct {
	// Name is the image's repository name below a registry prefix, such as
	// "virt-launcher".
	Name string
	// Binaries are program file names in the Builder's binary folder; each
	// is installed as /usr/bin/NAME, mode 0755.
	Binaries []string
	// Packages are Debian package names; the image carries their files and
	// those of everything they depend on (Depends and Pre-Depends, not
	// Recommends).
	Packages []string
	// User is what the image runs as, UID:GID, one of the users of Users.
	User string
	// Entrypoint is the image's entry point.
	Entrypoint []string
	// Why says, for an image that runs as root, what needs it.
	Why string
}

// User is an account of every image's /etc/passwd and /etc/group.
type User struct {
	Name string
	UID  int
	GID  int
	Home string
}

// Users are the accounts every image has. qemu (107) is the owner KubeVirt
// gives containerDisk files and its non-root launcher; libvirt's QEMU driver
// refuses to start unless libvirt-qemu and the kvm group exist; nonroot
// (65532) is what the daemons that need no privilege run as.
var Users = []User{
	{Name: "root", UID: 0, GID: 0, Home: "/root"},
	{Name: "qemu", UID: 107, GID: 107, Home: "/var/run/libvirt"},
	{Name: "libvirt-qemu", UID: 64055, GID: 108, Home: "/var/lib/libvirt"},
	{Name: "nonroot", UID: 65532, GID: 65532, Home: "/home/nonroot"},
}

// Groups are the groups of every image: each user's own, and kvm (108).
var Groups = []struct {
	Name string
	GID  int
}{
	{"root", 0}, {"qemu", 107}, {"kvm", 108}, {"libvirt-qemu", 64055}, {"nonroot", 65532},
}

// The users images run as.
const (
	UserRoot    = "0:0"
	UserQEMU    = "107:107"
	UserNonRoot = "65532:65532"
)

// Daemons is the catalog of virtkit's daemon images, in build order.
func Daemons() []Image {
	return []Image{
		{
			Name: "virt-api", Binaries: []string{"virt-api"}, Packages: []string{"libc6"},
			User: UserNonRoot, Entrypoint: []string{"/usr/bin/virt-api"},
		},
		{
			Name: "virt-controller", Binaries: []string{"virt-controller"}, Packages: []string{"libc6"},
			User: UserNonRoot, Entrypoint: []string{"/usr/bin/virt-controller"},
		},
		{
			Name: "virt-operator", Binaries: []string{"virt-operator"}, Packages: []string{"libc6"},
			User: UserNonRoot, Entrypoint: []string{"/usr/bin/virt-operator"},
		},
		{
			Name: "virt-handler", Binaries: []string{"virt-handler"}, Packages: []string{"libvirt0"},
			User: UserRoot, Entrypoint: []string{"/usr/bin/virt-handler"},
			Why: "it enters each launcher pod's network and mount namespaces and configures the node",
		},
		{
			Name:     "virt-launcher",
			Binaries: []string{"virt-launcher"},
			// libvirtd with its QEMU driver; QEMU for x86 under TCG, whose
			// accelerator is a loadable module of qemu-system-common, with its
			// firmware (seabios, ipxe-qemu; ovmf for EFI guests) and data
			// files; swtpm and its setup and CA tools for vTPMs; test, for
			// the readiness probe. As root (not how launcher pods run it), its
			// libvirtd starts in a mount namespace of its own, which the
			// shell, mkdir and mount set up.
			Packages: []string{
				"libvirt-daemon", "libvirt-daemon-driver-qemu",
				"qemu-system-x86", "qemu-system-common", "qemu-system-data", "seabios", "ipxe-qemu",
				"ovmf", "swtpm", "swtpm-tools",
				"dash", "coreutils", "mount",
			},
			// The qemu user, as launcher pods run it: a session libvirtd.
			User: UserQEMU, Entrypoint: []string{"/usr/bin/virt-launcher"},
		},
		{
			// qemu-img converts the formats that cannot be streamed
			// (qcow2, vmdk, vdi, vhd, vhdx) to raw; xz decompresses twice
			// as fast as Go's decoder. As QEMU's user, as CDI's importer
			// runs, so that the disk it writes is the guest's.
			Name: "virt-importer", Binaries: []string{"virt-importer"}, Packages: []string{"qemu-utils", "xz-utils"},
			User: UserQEMU, Entrypoint: []string{"/usr/bin/virt-importer"},
		},
		{
			// The server and the C library. As QEMU's user, as KubeVirt's
			// export pod runs (fsGroup 107), so that it reads the disks
			// the guests wrote.
			Name: "virt-exportserver", Binaries: []string{"virt-exportserver"}, Packages: []string{"libc6"},
			User: UserQEMU, Entrypoint: []string{"/usr/bin/virt-exportserver"},
		},
		{
			Name: "virt-exportproxy", Binaries: []string{"virt-exportproxy"}, Packages: []string{"libc6"},
			User: UserNonRoot, Entrypoint: []string{"/usr/bin/virt-exportproxy"},
		},
	}
}

// Pause is the sandbox image of a pod on a node that virtkit sets up itself
// (virt-local's real kubelet node): the static program of hack/pause, alone,
// which holds a pod's namespaces and reaps what it adopts.
func Pause() Image {
	return Image{Name: "pause", Binaries: []string{"pause"}, User: UserNonRoot, Entrypoint: []string{"/usr/bin/pause"}}
}

// All is every image `make images` builds: the daemons, then Pause.
func All() []Image { return append(Daemons(), Pause()) }
