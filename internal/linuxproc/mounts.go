package linuxproc

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// Mount is one line of a mountinfo file.
type Mount struct {
	// Root is the path within the source filesystem that is mounted (for a
	// bind mount, the folder that was bound).
	Root string
	// MountPoint is where it is mounted, relative to the process's root.
	MountPoint string
	// FSType and Source are the filesystem type and source device.
	FSType, Source string
	// Shared: the mount is in a peer group (its optional fields have
	// "shared:N"), so mounts below it propagate to its peers and slaves.
	Shared bool
}

// ReadMounts parses a mountinfo file such as /proc/self/mountinfo.
func ReadMounts(path string) ([]Mount, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read mounts: %w", err)
	}
	defer f.Close()
	var out []Mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		m := Mount{Root: unescape(fields[3]), MountPoint: unescape(fields[4])}
		for i := 6; i < len(fields); i++ {
			if strings.HasPrefix(fields[i], "shared:") {
				m.Shared = true
			}
			if fields[i] == "-" && i+2 < len(fields) {
				m.FSType, m.Source = fields[i+1], unescape(fields[i+2])
				break
			}
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mounts %s: %w", path, err)
	}
	return out, nil
}

// unescape undoes the octal escapes (\040 for space) of mountinfo fields.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			v := 0
			ok := true
			for _, c := range s[i+1 : i+4] {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + int(c-'0')
			}
			if ok {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
