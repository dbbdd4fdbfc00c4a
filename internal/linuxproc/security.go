package linuxproc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Security is what the kernel enforces on a process, from
// /proc/PID/status.
type Security struct {
	// UID is the effective user ID.
	UID int
	// NoNewPrivs: execve cannot grant privileges (setuid bits, file
	// capabilities).
	NoNewPrivs bool
	// Seccomp is the mode: 0 none, 1 strict, 2 filter.
	Seccomp int
	// Effective and Bounding are capability sets, one bit per capability
	// (see CapabilityBit).
	Effective, Bounding uint64
}

// SecurityOf reads the security state of pid.
func SecurityOf(pid int) (Security, error) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return Security{}, fmt.Errorf("status of pid %d: %w", pid, err)
	}
	defer f.Close()
	s, err := parseStatus(io.LimitReader(f, 64<<10))
	if err != nil {
		return Security{}, fmt.Errorf("status of pid %d: %w", pid, err)
	}
	return s, nil
}

func parseStatus(r io.Reader) (Security, error) {
	var s Security
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		var err error
		switch key {
		case "Uid": // real, effective, saved, filesystem
			f := strings.Fields(value)
			if len(f) < 2 {
				return Security{}, fmt.Errorf("uid line %q", value)
			}
			s.UID, err = strconv.Atoi(f[1])
		case "NoNewPrivs":
			s.NoNewPrivs = value == "1"
		case "Seccomp":
			s.Seccomp, err = strconv.Atoi(value)
		case "CapEff":
			s.Effective, err = strconv.ParseUint(value, 16, 64)
		case "CapBnd":
			s.Bounding, err = strconv.ParseUint(value, 16, 64)
		default:
			continue
		}
		if err != nil {
			return Security{}, fmt.Errorf("%s: %w", key, err)
		}
		seen[key] = true
	}
	if err := sc.Err(); err != nil {
		return Security{}, err
	}
	for _, k := range []string{"Uid", "NoNewPrivs", "Seccomp", "CapEff", "CapBnd"} {
		if !seen[k] {
			return Security{}, fmt.Errorf("no %s line", k)
		}
	}
	return s, nil
}

// capabilities are Linux's capability names (as Kubernetes writes them,
// without CAP_) in bit order.
var capabilities = []string{
	"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
	"SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
	"SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE",
	"SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP",
	"MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF",
	"CHECKPOINT_RESTORE",
}

// CapabilityBit returns the bit of a capability named as in a Kubernetes
// security context ("NET_ADMIN"; a CAP_ prefix is accepted).
func CapabilityBit(name string) (uint, bool) {
	name = strings.TrimPrefix(strings.ToUpper(name), "CAP_")
	for i, c := range capabilities {
		if c == name {
			return uint(i), true
		}
	}
	return 0, false
}

// CapabilityNames lists the capabilities of a set by name.
func CapabilityNames(set uint64) []string {
	var out []string
	for i := range 64 {
		if set&(1<<i) == 0 {
			continue
		}
		if i < len(capabilities) {
			out = append(out, capabilities[i])
		} else {
			out = append(out, "CAP_"+strconv.Itoa(i))
		}
	}
	return out
}
