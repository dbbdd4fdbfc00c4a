package metrics_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/virt/domain"
)

// A daemon registers its collectors into the registry it serves; a scrape
// computes the series from the cache (here a fake client) and the guests.
func Example() {
	cache := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(&virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "tiny"},
		Status:     virtv1.VirtualMachineInstanceStatus{NodeName: "node-1", Phase: virtv1.Running},
	}).Build()
	tiny := metrics.Guest{Namespace: "default", Name: "tiny", Node: "node-1",
		Stats: func(context.Context) (*domain.Stats, error) {
			return &domain.Stats{CPUTime: 1500000000, Memory: domain.MemoryStats{RSSKiB: 65536}}, nil
		}}

	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewVMIStats(cache), metrics.NewDomainStats([]metrics.GuestLister{guests{tiny}}))
	rec := httptest.NewRecorder()
	metrics.Handler(reg).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, "kubevirt_vmi_phase_count") || strings.HasPrefix(line, "kubevirt_vmi_memory_resident_bytes") ||
			strings.HasPrefix(line, "kubevirt_vmi_cpu_usage_seconds_total") {
			fmt.Println(line)
		}
	}
	n, _ := testutil.GatherAndCount(reg, "kubevirt_vmi_info")
	fmt.Println("kubevirt_vmi_info series:", n)
	// Output:
	// kubevirt_vmi_cpu_usage_seconds_total{name="tiny",namespace="default",node="node-1"} 1.5
	// kubevirt_vmi_memory_resident_bytes{name="tiny",namespace="default",node="node-1"} 6.7108864e+07
	// kubevirt_vmi_phase_count{flavor="<none>",instance_type="<none>",node="node-1",os="<none>",phase="running",preference="<none>",workload="<none>"} 1
	// kubevirt_vmi_info series: 1
}
