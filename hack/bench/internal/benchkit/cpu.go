package benchkit

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/virtkit/virtkit/local/cluster"
)

// OtherComponent is where CPUByComponent counts samples no component
// label claims.
const OtherComponent = "other (this benchmark, client-go's shared transports, the Go runtime)"

// CPUByComponent sums a CPU profile's samples, in seconds, by their
// "component" label (virt-local labels each in-process component's
// goroutines: cluster.ComponentLabel).
func CPUByComponent(prof *bytes.Buffer) (map[string]float64, error) {
	p, err := profile.Parse(prof)
	if err != nil {
		return nil, err
	}
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			idx = i
		}
	}
	if idx < 0 {
		return nil, fmt.Errorf("the CPU profile has no cpu samples")
	}
	out := map[string]float64{}
	for _, s := range p.Sample {
		comp := OtherComponent
		if v := s.Label[cluster.ComponentLabel]; len(v) > 0 {
			comp = v[0]
		}
		out[comp] += float64(s.Value[idx]) / 1e9
	}
	return out, nil
}

// ProcessCPU is this process's user + system CPU seconds so far.
func ProcessCPU() float64 { return ProcCPU(os.Getpid()) }

// ProcCPU is process pid's user + system CPU seconds so far (0 when it is
// gone).
func ProcCPU(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command (which may hold spaces) in parentheses.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var utime, stime float64
	fmt.Sscan(f[11], &utime)
	fmt.Sscan(f[12], &stime)
	return (utime + stime) / 100 // USER_HZ
}
