package benchkit

import (
	"os"
	"strconv"
	"strings"
)

// ProcKiB is the value in KiB of key (e.g. "VmRSS:") in /proc/PID/file
// (e.g. "status", "smaps_rollup"); 0 when the process or key is gone.
func ProcKiB(pid int, file, key string) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/" + file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == key {
			v, _ := strconv.ParseFloat(f[1], 64)
			return v
		}
	}
	return 0
}

// RSSMiB is a process's resident set size (VmRSS) in MiB.
func RSSMiB(pid int) float64 { return ProcKiB(pid, "status", "VmRSS:") / 1024 }

// Processes lists the processes whose command's first word ends in name.
func Processes(name string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(b) == 0 {
			continue
		}
		arg0, _, _ := strings.Cut(string(b), "\x00")
		if strings.HasSuffix(arg0, "/"+name) || arg0 == name {
			pids = append(pids, pid)
		}
	}
	return pids
}

// ParentPID is a process's parent; 0 when it is gone.
func ParentPID(pid int) int {
	return int(ProcKiB(pid, "status", "PPid:"))
}

// Cmdline is a process's command line, its arguments joined by spaces.
func Cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
}
