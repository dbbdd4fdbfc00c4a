package hostfacts

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/virtkit/virtkit/virt/domain"
)

// Facts are the node's and one pod's facts for virt/domain.Host.
type Facts struct {
	// CPU holds the CPUs the pod's process may run on (DedicatedCPUs, in
	// ascending order) and the node's NUMA cells.
	CPU domain.HostCPU
	// HugepageSizes are the hugepage sizes the node's kernel offers, as
	// Kubernetes quantities ("2Mi", "1Gi"), ascending.
	HugepageSizes []string
}

// maxFile bounds every read: the files read here are a few KiB.
const maxFile = 64 << 10

// Read returns the facts of the pod whose process on the node is pid (its
// launcher's libvirtd, whose CPU affinity is the pod's cpuset), from node,
// the node's file system.
func Read(node fs.FS, pid int) (Facts, error) {
	var f Facts
	var err error
	if f.CPU.DedicatedCPUs, err = allowedCPUs(node, pid); err != nil {
		return Facts{}, err
	}
	if f.CPU.NUMACells, err = numaCells(node); err != nil {
		return Facts{}, err
	}
	if f.HugepageSizes, err = hugepageSizes(node); err != nil {
		return Facts{}, err
	}
	return f, nil
}

// allowedCPUs reads Cpus_allowed_list of /proc/PID/status.
func allowedCPUs(node fs.FS, pid int) ([]int, error) {
	name := path.Join("proc", strconv.Itoa(pid), "status")
	b, err := readFile(node, name)
	if err != nil || b == nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Cpus_allowed_list:"); ok {
			cpus, err := ParseCPUList(strings.TrimSpace(v))
			if err != nil {
				return nil, fmt.Errorf("hostfacts: /%s: Cpus_allowed_list: %w", name, err)
			}
			return cpus, nil
		}
	}
	return nil, nil
}

// numaCells reads /sys/devices/system/node/nodeN/cpulist.
func numaCells(node fs.FS) ([]domain.NUMACell, error) {
	const dir = "sys/devices/system/node"
	ents, err := readDir(node, dir)
	if err != nil || ents == nil {
		return nil, err
	}
	var cells []domain.NUMACell
	for _, e := range ents {
		id, ok := strings.CutPrefix(e.Name(), "node")
		n, err := strconv.Atoi(id)
		if !ok || err != nil || n < 0 {
			continue
		}
		name := path.Join(dir, e.Name(), "cpulist")
		b, err := readFile(node, name)
		if err != nil {
			return nil, err
		}
		cpus, err := ParseCPUList(strings.TrimSpace(string(b)))
		if err != nil {
			return nil, fmt.Errorf("hostfacts: /%s: %w", name, err)
		}
		if len(cpus) > 0 {
			cells = append(cells, domain.NUMACell{ID: n, CPUs: cpus})
		}
	}
	slices.SortFunc(cells, func(a, b domain.NUMACell) int { return a.ID - b.ID })
	return cells, nil
}

// hugepageSizes reads the hugepages-<n>kB folders of /sys/kernel/mm/hugepages.
func hugepageSizes(node fs.FS) ([]string, error) {
	const dir = "sys/kernel/mm/hugepages"
	ents, err := readDir(node, dir)
	if err != nil || ents == nil {
		return nil, err
	}
	var kib []int
	for _, e := range ents {
		v, ok := strings.CutPrefix(e.Name(), "hugepages-")
		if !ok {
			continue
		}
		v, ok = strings.CutSuffix(v, "kB")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n <= 0 {
			return nil, fmt.Errorf("hostfacts: /%s/%s: not a hugepage size", dir, e.Name())
		}
		kib = append(kib, n)
	}
	slices.Sort(kib)
	out := make([]string, 0, len(kib))
	for _, n := range kib {
		out = append(out, quantity(n))
	}
	return out, nil
}

// quantity spells n KiB as Kubernetes does for hugepage resources.
func quantity(n int) string {
	switch {
	case n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "Gi"
	case n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "Mi"
	}
	return strconv.Itoa(n) + "Ki"
}

// readDir lists dir of node; a missing folder is nil and no error.
func readDir(node fs.FS, dir string) ([]fs.DirEntry, error) {
	ents, err := fs.ReadDir(node, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("hostfacts: /%s: %w", dir, err)
	}
	return ents, nil
}

// readFile reads name from node, at most maxFile bytes; a missing file is
// nil and no error.
func readFile(node fs.FS, name string) ([]byte, error) {
	f, err := node.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("hostfacts: /%s: %w", name, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("hostfacts: /%s: %w", name, err)
	}
	if len(b) > maxFile {
		return nil, fmt.Errorf("hostfacts: /%s: longer than %d bytes", name, maxFile)
	}
	return b, nil
}
