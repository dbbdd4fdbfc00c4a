package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/virtkit/virtkit/internal/linuxproc"
)

// Main runs the package's tests and then fails the run when anything the
// tests started is still there: a process marked with OwnerEnv or seeing a
// mount from a testenv folder (guests), a mount of a testenv folder in this
// process's namespace, a network namespace named with this process's prefix,
// or a cgroup that appeared during the run. Use it as
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
func Main(m *testing.M) {
	before := cgroups()
	code := m.Run()
	if left := waitLeftovers(before, 5*time.Second); len(left) > 0 {
		fmt.Fprintln(os.Stderr, "testenv: the tests left these behind:")
		for _, l := range left {
			fmt.Fprintln(os.Stderr, "  "+l)
		}
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// waitLeftovers lists what this process's tests started and did not clean up,
// after giving things that are already ending up to grace to go. cgroupsBefore
// is the set of cgroup folders seen before the tests ran.
func waitLeftovers(cgroupsBefore map[string]bool, grace time.Duration) []string {
	deadline := time.Now().Add(grace)
	for {
		left := leftovers(cgroupsBefore)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func leftovers(cgroupsBefore map[string]bool) []string {
	var out []string
	pid := strconv.Itoa(os.Getpid())
	prefix := dirPrefix()
	procs, err := linuxproc.List(linuxproc.Any(
		linuxproc.WithEnv(OwnerEnv, pid),
		linuxproc.SeesMountFrom(prefix),
	))
	if err != nil {
		out = append(out, "process scan failed: "+err.Error())
	}
	for _, p := range procs {
		out = append(out, "process "+p.String())
	}
	mounts, err := linuxproc.ReadMounts("/proc/self/mountinfo")
	if err != nil {
		out = append(out, "mount scan failed: "+err.Error())
	}
	for _, m := range mounts {
		if strings.HasPrefix(m.MountPoint, prefix) || strings.HasPrefix(m.Root, prefix) {
			out = append(out, "mount "+m.MountPoint+" (from "+m.Root+")")
		}
	}
	netns, _ := filepath.Glob("/run/netns/" + NamePrefix() + "*")
	for _, n := range netns {
		out = append(out, "network namespace "+filepath.Base(n))
	}
	for g := range cgroups() {
		if !cgroupsBefore[g] && !othersCgroup(g) {
			out = append(out, "cgroup "+g)
		}
	}
	sort.Strings(out)
	return out
}

// namePrefixPID finds the PID in a NamePrefix within a name.
var namePrefixPID = regexp.MustCompile(`vkt-([0-9]+)-`)

// othersCgroup reports whether cgroup folder g is named after another test
// process's NamePrefix: test packages run in parallel, and each checks only
// its own.
func othersCgroup(g string) bool {
	m := namePrefixPID.FindStringSubmatch(filepath.Base(g))
	return m != nil && m[1] != strconv.Itoa(os.Getpid())
}

// NamePrefix is the prefix for the names of network namespaces, cgroups and
// other host-wide objects this process's tests create, so that the leftover
// check can find them.
func NamePrefix() string { return "vkt-" + strconv.Itoa(os.Getpid()) + "-" }

// cgroups returns the cgroup folders, two levels deep, that a hypervisor
// would create (machine slices, libvirt or QEMU scopes, virtkit groups).
func cgroups() map[string]bool {
	out := map[string]bool{}
	for _, pattern := range []string{"/sys/fs/cgroup/*", "/sys/fs/cgroup/*/*"} {
		dirs, _ := filepath.Glob(pattern)
		for _, d := range dirs {
			name := filepath.Base(d)
			if st, err := os.Stat(d); err != nil || !st.IsDir() {
				continue
			}
			for _, word := range []string{"machine", "libvirt", "qemu", "virtkit", "vkt-"} {
				if strings.Contains(name, word) {
					out[d] = true
				}
			}
		}
	}
	return out
}
