package main

import (
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// percentile is the nearest-rank percentile p (0 < p <= 100) of xs.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[max(rank, 1)-1]
}

// procKiB reads one "Key: value kB" line of /proc/PID/<file>.
func procKiB(pid int, file, key string) float64 {
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

// processes lists the processes whose command's first word ends in name.
func processes(name string) []int {
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
