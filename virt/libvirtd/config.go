package libvirtd

import (
	"crypto/rand"
	"fmt"
	"path/filepath"
	"strings"
)

// Config describes one private libvirtd. The zero value is not usable: Dir is
// required. Config is plain data; [Start] applies it.
type Config struct {
	// Dir is the instance folder (see the package doc). Keep it short: the
	// socket path Dir/run/libvirt-sock must fit a unix socket address (107 bytes).
	Dir string
	// HostUUID identifies this daemon to migration peers; two instances with
	// the same UUID refuse to migrate between each other as "same host".
	// Empty means a random one, chosen by [Config.WithDefaults].
	HostUUID string
	// CacheDir replaces Dir/cache when set, so that several instances share
	// QEMU's probed capabilities and skip the probe on start.
	CacheDir string
	// Binary is the libvirtd executable; empty means "libvirtd" on PATH or in /usr/sbin.
	Binary string
	// Drivers lists the connection drivers the daemon loads, by module name
	// ("qemu", "secret", "storage", "network", "nodedev", "nwfilter",
	// "interface"). Empty means DefaultDrivers(); "all" loads every one
	// installed ([AllDrivers]). A launcher needs only QEMU's: each further
	// driver costs start-up time and memory in every VM's daemon.
	Drivers []string
	// LogLevel is libvirt's log priority for Dir/log/libvirtd.log: 1 debug,
	// 2 info, 3 warning, 4 error. Zero means 3.
	LogLevel int
	// QEMUAs, when set, runs QEMU as that user and group under libvirt's
	// DAC security driver: libvirt gives the guest's images to it for the
	// guest's life and QEMU keeps no capability. QEMU must then reach every
	// file of the domain through folders that user may search, and create
	// its sockets and logs in folders it may write. Nil runs QEMU as root
	// with no security driver.
	QEMUAs *Owner
	// Session runs the daemon in libvirt's session mode, for a caller that
	// is not root (libvirt picks the mode by the daemon's user): no mount
	// namespace, libvirt's files below Dir through the XDG folders (see the
	// package doc), and QEMU as the daemon's own user, so QEMUAs must be
	// nil. Nothing then needs a capability.
	Session bool
	// ConfigDir, with Session, replaces Dir/etc as libvirt's configuration
	// folder ($XDG_CONFIG_HOME). libvirt makes each guest's monitor and
	// channel sockets below it, at paths of about 90 bytes plus its length
	// (libvirt/qemu/channel/target/domain-ID-NAME/org.qemu.guest_agent.0),
	// and a socket's path holds at most 107: a deep Dir needs a short one.
	ConfigDir string
}

// Owner is a numeric user and group.
type Owner struct {
	UID, GID int
}

// DefaultDrivers are the connection drivers a launcher's daemon loads: QEMU,
// and secrets for disks that need credentials.
func DefaultDrivers() []string { return []string{"qemu", "secret"} }

// AllDrivers, as the only entry of Config.Drivers, loads every driver
// installed, like a system libvirtd.
const AllDrivers = "all"

// Paths are the host paths of an instance.
type Paths struct {
	Etc, Run, Lib, Log, Cache string
	// Socket is libvirt's read-write socket.
	Socket string
	// Runtime is a session daemon's $XDG_RUNTIME_DIR: Run, or with
	// ConfigDir a folder below it, short enough for the sockets libvirt
	// makes there (a vTPM's).
	Runtime string
	// LogFile is libvirtd's own log; Stderr holds what it printed before logging started.
	LogFile, Stderr string
	// QEMULogDir holds one NAME.log per domain: QEMU's command line and errors.
	QEMULogDir string
	// DriverDir holds links to the driver modules the daemon may load.
	DriverDir string
	// Swtpm holds each domain's vTPM state, <uuid>/tpm2 (libvirt's
	// swtpm storage folder).
	Swtpm string
	// SwtpmLocalCA holds the local CA that signs a session daemon's vTPM
	// endorsement key certificates (swtpm_localca's state); empty for a
	// system daemon, whose swtpm_setup uses the host's.
	SwtpmLocalCA string
	// NVRAM is libvirt's folder of EFI variable stores.
	NVRAM string
}

// maxSocketPath is the longest path a unix socket address holds on Linux.
const maxSocketPath = 107

// Paths returns where the instance keeps its files.
func (c Config) Paths() Paths {
	cache := c.CacheDir
	if cache == "" || c.Session {
		// A session daemon's cache folder also holds QEMU's logs, which
		// are its own; only the capabilities in it are shared (Start).
		cache = filepath.Join(c.Dir, "cache")
	}
	run := filepath.Join(c.Dir, "run")
	log := filepath.Join(c.Dir, "log")
	if c.Session {
		etc, runtime := filepath.Join(c.Dir, "etc"), run
		if c.ConfigDir != "" {
			etc, runtime = c.ConfigDir, filepath.Join(c.ConfigDir, "run")
		}
		return Paths{
			Etc:        etc,
			Run:        run,
			Runtime:    runtime,
			Lib:        filepath.Join(etc, "libvirt", "qemu", "lib"),
			Log:        log,
			Cache:      cache,
			Socket:     filepath.Join(run, "libvirt-sock"),
			LogFile:    filepath.Join(log, "libvirtd.log"),
			Stderr:     filepath.Join(log, "libvirtd.stderr"),
			QEMULogDir: filepath.Join(cache, "libvirt", "qemu", "log"),
			DriverDir:  filepath.Join(c.Dir, "drivers"),
			// libvirt's: below $XDG_CONFIG_HOME/libvirt.
			Swtpm:        filepath.Join(etc, "libvirt", "qemu", "swtpm"),
			SwtpmLocalCA: filepath.Join(etc, "swtpm-localca"),
			NVRAM:        filepath.Join(etc, "libvirt", "qemu", "nvram"),
		}
	}
	return Paths{
		Etc:        filepath.Join(c.Dir, "etc"),
		Run:        run,
		Runtime:    run,
		Lib:        filepath.Join(c.Dir, "lib"),
		Log:        log,
		Cache:      cache,
		Socket:     filepath.Join(run, "libvirt-sock"),
		LogFile:    filepath.Join(log, "libvirtd.log"),
		Stderr:     filepath.Join(log, "libvirtd.stderr"),
		QEMULogDir: filepath.Join(log, "qemu"),
		DriverDir:  filepath.Join(c.Dir, "drivers"),
		// libvirt's /var/lib/libvirt/{swtpm,qemu/nvram}, which the
		// daemon's mount namespace puts in Lib.
		Swtpm: filepath.Join(c.Dir, "lib", "swtpm"),
		NVRAM: filepath.Join(c.Dir, "lib", "qemu", "nvram"),
	}
}

// URI is the libvirt connection URI of the instance's QEMU driver.
func (c Config) URI() string { return SocketURI(c.Paths().Socket) }

// SocketURI is the URI of a private libvirtd listening on socket, in either
// mode: a session daemon takes only qemu:///session, and a system daemon
// takes it too.
func SocketURI(socket string) string { return "qemu:///session?socket=" + socket }

// PeerSocketURI is the URI by which another daemon (a migration's source,
// peer to peer) reaches a private libvirtd listening on socket, in either
// mode: the remote driver's form, as a plain qemu:/// URI would name the
// dialling daemon itself.
func PeerSocketURI(socket string) string { return "qemu+unix:///session?socket=" + socket }

// WithDefaults returns c with a random HostUUID when none is set, and the default log level.
func (c Config) WithDefaults() (Config, error) {
	if c.HostUUID == "" {
		u, err := randomUUID()
		if err != nil {
			return c, fmt.Errorf("libvirtd: host UUID: %w", err)
		}
		c.HostUUID = u
	}
	if c.LogLevel == 0 {
		c.LogLevel = 3
	}
	if len(c.Drivers) == 0 {
		c.Drivers = DefaultDrivers()
	}
	return c, nil
}

// Validate reports the first field that makes c unusable.
func (c Config) Validate() error {
	switch {
	case c.Dir == "":
		return fmt.Errorf("libvirtd: Config.Dir: required")
	case !filepath.IsAbs(c.Dir):
		return fmt.Errorf("libvirtd: Config.Dir %q: must be an absolute path", c.Dir)
	case len(c.Paths().Socket) > maxSocketPath:
		return fmt.Errorf("libvirtd: Config.Dir %q: too long, socket path %s exceeds %d bytes", c.Dir, c.Paths().Socket, maxSocketPath)
	case strings.ContainsAny(c.Dir, "\"\n"):
		return fmt.Errorf("libvirtd: Config.Dir %q: must not contain quotes or newlines", c.Dir)
	case c.HostUUID != "" && !validUUID(c.HostUUID):
		return fmt.Errorf("libvirtd: Config.HostUUID %q: not a UUID, or all its digits are the same (libvirt refuses those)", c.HostUUID)
	case !validDrivers(c.Drivers):
		return fmt.Errorf("libvirtd: Config.Drivers %q: names must be plain module names such as \"qemu\"", c.Drivers)
	case c.LogLevel < 0 || c.LogLevel > 4:
		return fmt.Errorf("libvirtd: Config.LogLevel %d: must be 1 to 4 (0 for the default)", c.LogLevel)
	case c.ConfigDir != "" && !c.Session:
		return fmt.Errorf("libvirtd: Config.ConfigDir: only for a session daemon (Config.Session)")
	case c.ConfigDir != "" && (!filepath.IsAbs(c.ConfigDir) || strings.ContainsAny(c.ConfigDir, "\"\n")):
		return fmt.Errorf("libvirtd: Config.ConfigDir %q: must be an absolute path without quotes or newlines", c.ConfigDir)
	case c.Session && c.QEMUAs != nil:
		return fmt.Errorf("libvirtd: Config.QEMUAs: must be nil with Session (QEMU runs as the session daemon's own user)")
	}
	return nil
}

func randomUUID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}

func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	digits := map[rune]bool{}
	for i, r := range s {
		switch i {
		case 8, 13, 18, 23:
			if r != '-' {
				return false
			}
			continue
		}
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
		digits[r] = true
	}
	return len(digits) > 1
}

func validDrivers(ds []string) bool {
	for _, d := range ds {
		if d == "" || strings.ContainsAny(d, "/. ") {
			return false
		}
	}
	return true
}
