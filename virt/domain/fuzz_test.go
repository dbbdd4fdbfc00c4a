package domain

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit/virt/spec"
)

// FuzzConvert feeds arbitrary VMI manifests through Convert as they are, and
// through virt/spec's DefaultVMI and ValidateVMI and then Convert, as the
// handler does: whatever the spec, nothing panics and every domain Convert
// returns marshals. The golden
// manifests are the seed corpus. Run with
//
//	go test ./virt/domain/ -run '^$' -fuzz FuzzConvert -fuzztime 60s
func FuzzConvert(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, file := range files {
		if strings.HasSuffix(file, ".host.yaml") {
			continue
		}
		if raw, err := os.ReadFile(file); err == nil {
			f.Add(raw)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		vmi := &virtv1.VirtualMachineInstance{}
		if err := yaml.Unmarshal(raw, vmi); err != nil {
			return
		}
		convertAndMarshal(t, vmi)
		spec.DefaultVMI(vmi)
		_ = spec.ValidateVMI(vmi)
		convertAndMarshal(t, vmi)
	})
}

func convertAndMarshal(t *testing.T, vmi *virtv1.VirtualMachineInstance) {
	host := testHost(vmi)
	host.CPU.DedicatedCPUs = []int{0, 1, 2, 3}
	host.CPU.NUMACells = []NUMACell{{ID: 0, CPUs: []int{0, 1}}, {ID: 1, CPUs: []int{2, 3}}}
	host.VSOCKCID = 3
	dom, err := Convert(vmi, host)
	if err == nil {
		if _, err := dom.Marshal(); err != nil {
			t.Fatalf("Marshal: %v", err)
		}
	}
}
