package kubelet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const cgroupFS = "/sys/fs/cgroup"

// cgroupDirs are the folders of cgroup root name (such as "/virtkit-NODE")
// in every hierarchy: one under cgroup v2, one per controller hierarchy
// under v1.
func cgroupDirs(name string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(cgroupFS, "cgroup.controllers")); err == nil {
		return []string{filepath.Join(cgroupFS, name)}, nil
	}
	entries, err := os.ReadDir(cgroupFS)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		if e.Type()&os.ModeSymlink != 0 || !e.IsDir() {
			continue // cpu -> cpu,cpuacct and friends are links
		}
		dirs = append(dirs, filepath.Join(cgroupFS, e.Name(), name))
	}
	return dirs, nil
}

// createCgroupRoot makes the kubelet's cgroup root in every hierarchy; under
// cpuset a new group has no CPUs or memory nodes until given its parent's.
func createCgroupRoot(name string) error {
	dirs, err := cgroupDirs(name)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("cgroup %s: %w", d, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			parent, err := os.ReadFile(filepath.Join(filepath.Dir(d), f))
			if err != nil {
				continue // not the cpuset hierarchy
			}
			if err := os.WriteFile(filepath.Join(d, f), parent, 0o644); err != nil {
				return fmt.Errorf("cgroup %s: %s: %w", d, f, err)
			}
		}
	}
	return nil
}

// removeCgroupRoot kills what still runs below the cgroup root and removes
// its folders, deepest first, in every hierarchy.
func removeCgroupRoot(name string) error {
	dirs, err := cgroupDirs(name)
	if err != nil {
		return err
	}
	var errs []error
	for _, root := range dirs {
		var all []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				all = append(all, p)
			}
			return nil
		})
		sort.Slice(all, func(i, j int) bool { return len(all[i]) > len(all[j]) })
		for _, d := range all {
			killProcs(d)
			if err := rmdirRetry(d); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// killProcs sends SIGKILL to every process of cgroup folder d.
func killProcs(d string) {
	b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, line := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(line); err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// rmdirRetry removes a cgroup folder, waiting a little for killed processes
// to leave it.
func rmdirRetry(d string) error {
	var err error
	for i := 0; i < 50; i++ {
		err = syscall.Rmdir(d)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) {
			break
		}
		killProcs(d)
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("cgroup %s: %w", d, err)
}
