package handler_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"gotest.tools/v3/assert"

	"github.com/virtkit/virtkit/metrics"
)

// The handler lists the guests it runs for metrics.DomainStats: each
// labelled with its VMI and node, its disks with their volumes, its NICs
// with their interfaces and networks. A guest that ended is no longer listed.
func TestGuestsForMetrics(t *testing.T) {
	n := newFakeNode(t)
	assert.Equal(t, len(n.r.Guests()), 0)
	n.running("vm1")
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewDomainStats([]metrics.GuestLister{n.r}))
	want := `
# HELP kubevirt_vmi_memory_domain_bytes The amount of memory in bytes allocated to the domain. The ` + "`memory`" + ` value in domain xml file.
# TYPE kubevirt_vmi_memory_domain_bytes gauge
kubevirt_vmi_memory_domain_bytes{name="vm1",namespace="default",node="node-a"} 1.34217728e+08
# HELP kubevirt_vmi_storage_iops_read_total Total number of I/O read operations.
# TYPE kubevirt_vmi_storage_iops_read_total counter
kubevirt_vmi_storage_iops_read_total{drive="root",name="vm1",namespace="default",node="node-a"} 0
# HELP kubevirt_vmi_network_transmit_bytes_total Total network traffic transmitted in bytes.
# TYPE kubevirt_vmi_network_transmit_bytes_total counter
kubevirt_vmi_network_transmit_bytes_total{interface="default",name="vm1",namespace="default",network="default",node="node-a"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kubevirt_vmi_memory_domain_bytes",
		"kubevirt_vmi_storage_iops_read_total", "kubevirt_vmi_network_transmit_bytes_total"); err != nil {
		t.Error(err)
	}

	vmi := n.vmi("vm1")
	assert.NilError(t, n.c.Delete(t.Context(), vmi))
	for range 5 {
		if len(n.r.Guests()) == 0 {
			break
		}
		n.reconcile("vm1")
	}
	assert.Equal(t, len(n.r.Guests()), 0)
	if c, err := testutil.GatherAndCount(reg, "kubevirt_vmi_cpu_usage_seconds_total"); err != nil || c != 0 {
		t.Errorf("%d CPU series (%v) after the guest ended, want none", c, err)
	}
}
