package node

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// startTime returns the start time of pid in clock ticks since boot
// (/proc/PID/stat field 22).
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := bytes.Fields(b[i+1:])
	// fields[0] is field 3 (state): field 22 is fields[19].
	if len(fields) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields)+2)
	}
	return strconv.ParseUint(string(fields[19]), 10, 64)
}

// nsInode returns the inode of a namespace file (/proc/PID/ns/KIND or a
// bind-mounted namespace).
func nsInode(path string) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// pidsInNamespace lists the processes whose namespace of kind ("net",
// "mnt") has inode ino.
func pidsInNamespace(kind string, ino uint64) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if got, err := nsInode(filepath.Join("/proc", e.Name(), "ns", kind)); err == nil && got == ino {
			out = append(out, pid)
		}
	}
	return out
}

// alive reports whether ref's process still runs (and is not a zombie
// reusing nothing: a reused PID has another start time).
func alive(ref ProcessRef) bool {
	if ref.PID <= 0 {
		return false
	}
	st, err := startTime(ref.PID)
	return err == nil && st == ref.StartTime
}
