package hostfacts

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// maxCPU bounds the CPU numbers ParseCPUList accepts, so that a range such
// as 0-4000000000 is refused rather than allocated.
const maxCPU = 1 << 16

// ParseCPUList parses the kernel's CPU list format ("0-3,8,10-11"), as in
// /proc/PID/status's Cpus_allowed_list and sysfs cpulist files. It returns
// the CPUs ascending, each once; "" is none.
func ParseCPUList(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := cpuNumber(lo)
		if err != nil {
			return nil, fmt.Errorf("cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = cpuNumber(hi); err != nil {
				return nil, fmt.Errorf("cpu list %q: %w", s, err)
			}
			if b < a {
				return nil, fmt.Errorf("cpu list %q: range %s ends before it starts", s, part)
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func cpuNumber(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n >= maxCPU {
		return 0, fmt.Errorf("%q is not a CPU number", s)
	}
	return n, nil
}
