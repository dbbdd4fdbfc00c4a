package metrics_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/virt/domain"
	domainfake "github.com/virtkit/virtkit/virt/domain/fake"
)

// guests is a GuestLister of fixed guests.
type guests []metrics.Guest

func (g guests) Guests() []metrics.Guest { return g }

// runningDomain defines and starts name on m: 256 MiB, one disk and one NIC.
func runningDomain(t *testing.T, m *domainfake.Manager, name string) {
	t.Helper()
	ctx := context.Background()
	doc := &libvirtxml.Domain{
		Type: "qemu", Name: name,
		Memory: &libvirtxml.DomainMemory{Value: 256, Unit: "MiB"},
		VCPU:   &libvirtxml.DomainVCPU{Value: 1},
		OS:     &libvirtxml.DomainOS{Type: &libvirtxml.DomainOSType{Arch: "x86_64", Machine: "q35", Type: "hvm"}},
		Devices: &libvirtxml.DomainDeviceList{
			Disks: []libvirtxml.DomainDisk{{Device: "disk",
				Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "qcow2"},
				Source: &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: "/disks/" + name + "/root.qcow2"}},
				Target: &libvirtxml.DomainDiskTarget{Dev: "vda", Bus: "virtio"}}},
			Interfaces: []libvirtxml.DomainInterface{{
				Source: &libvirtxml.DomainInterfaceSource{Ethernet: &libvirtxml.DomainInterfaceSourceEthernet{}},
				Target: &libvirtxml.DomainInterfaceTarget{Dev: "tap0", Managed: "no"}}},
		},
	}
	if err := m.Define(ctx, doc); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx, name, domain.StartOptions{}); err != nil {
		t.Fatal(err)
	}
}

func guestOf(m domain.Manager, ns, name, node string, mapped bool) metrics.Guest {
	g := metrics.Guest{Namespace: ns, Name: name, Node: node,
		Stats: func(ctx context.Context) (*domain.Stats, error) { return m.Stats(ctx, ns+"_"+name) }}
	if mapped {
		g.Drives = map[string]string{"/disks/" + ns + "_" + name + "/root.qcow2": "rootdisk"}
		g.Interfaces = map[string]metrics.GuestInterface{"tap0": {Interface: "default", Network: "pod"}}
	}
	return g
}

// The guests of every lister are read at scrape time and labelled with
// their VMI, node, volume and interface; a disk or NIC the guest does not
// map keeps its device's name.
func TestDomainStatsSeries(t *testing.T) {
	frozen := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	dom := domainfake.New(domainfake.WithClock(func() time.Time { return frozen }))
	runningDomain(t, dom, "ns_a")
	runningDomain(t, dom, "ns_b")
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewDomainStats([]metrics.GuestLister{
		guests{guestOf(dom, "ns", "a", "node-1", true)},
		guests{guestOf(dom, "ns", "b", "node-2", false)},
	}))
	// The fake: 256 MiB, a quarter of it resident, one 10 ms CPU tick per read.
	want := `
# HELP kubevirt_vmi_cpu_usage_seconds_total Total CPU time spent in all modes (sum of both vcpu and hypervisor usage).
# TYPE kubevirt_vmi_cpu_usage_seconds_total counter
kubevirt_vmi_cpu_usage_seconds_total{name="a",namespace="ns",node="node-1"} 0.01
kubevirt_vmi_cpu_usage_seconds_total{name="b",namespace="ns",node="node-2"} 0.01
# HELP kubevirt_vmi_memory_resident_bytes Resident set size of the process running the domain.
# TYPE kubevirt_vmi_memory_resident_bytes gauge
kubevirt_vmi_memory_resident_bytes{name="a",namespace="ns",node="node-1"} 6.7108864e+07
kubevirt_vmi_memory_resident_bytes{name="b",namespace="ns",node="node-2"} 6.7108864e+07
# HELP kubevirt_vmi_memory_domain_bytes The amount of memory in bytes allocated to the domain. The ` + "`memory`" + ` value in domain xml file.
# TYPE kubevirt_vmi_memory_domain_bytes gauge
kubevirt_vmi_memory_domain_bytes{name="a",namespace="ns",node="node-1"} 2.68435456e+08
kubevirt_vmi_memory_domain_bytes{name="b",namespace="ns",node="node-2"} 2.68435456e+08
# HELP kubevirt_vmi_storage_read_traffic_bytes_total Total number of bytes read from storage.
# TYPE kubevirt_vmi_storage_read_traffic_bytes_total counter
kubevirt_vmi_storage_read_traffic_bytes_total{drive="rootdisk",name="a",namespace="ns",node="node-1"} 0
kubevirt_vmi_storage_read_traffic_bytes_total{drive="vda",name="b",namespace="ns",node="node-2"} 0
# HELP kubevirt_vmi_network_receive_bytes_total Total network traffic received in bytes.
# TYPE kubevirt_vmi_network_receive_bytes_total counter
kubevirt_vmi_network_receive_bytes_total{interface="default",name="a",namespace="ns",network="pod",node="node-1"} 0
kubevirt_vmi_network_receive_bytes_total{interface="tap0",name="b",namespace="ns",network="",node="node-2"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"kubevirt_vmi_cpu_usage_seconds_total", "kubevirt_vmi_memory_resident_bytes", "kubevirt_vmi_memory_domain_bytes",
		"kubevirt_vmi_storage_read_traffic_bytes_total", "kubevirt_vmi_network_receive_bytes_total"); err != nil {
		t.Error(err)
	}
	// What the fake does not report (balloon statistics, the CPU time
	// split) is left out rather than reported as zero.
	for name, want := range map[string]int{
		"kubevirt_vmi_memory_available_bytes":         0,
		"kubevirt_vmi_cpu_user_usage_seconds_total":   0,
		"kubevirt_vmi_memory_actual_balloon_bytes":    2,
		"kubevirt_vmi_storage_iops_write_total":       2,
		"kubevirt_vmi_storage_flush_requests_total":   2,
		"kubevirt_vmi_network_transmit_packets_total": 2,
	} {
		if got, err := testutil.GatherAndCount(reg, name); err != nil || got != want {
			t.Errorf("%s: %d series (%v), want %d", name, got, err, want)
		}
	}
}

// A guest whose libvirt hangs is left out of the scrape once the timeout
// passes; the others are reported, and the scrape does not hang.
func TestDomainStatsTimeout(t *testing.T) {
	hung, ok := domainfake.New(), domainfake.New()
	runningDomain(t, hung, "ns_hung")
	runningDomain(t, ok, "ns_ok")
	release := hung.Hold(domain.OpStats)
	defer release()
	c := metrics.NewDomainStats([]metrics.GuestLister{guests{guestOf(hung, "ns", "hung", "n", false), guestOf(ok, "ns", "ok", "n", false)}},
		metrics.WithTimeout(200*time.Millisecond))
	start := time.Now()
	n := testutil.CollectAndCount(c, "kubevirt_vmi_cpu_usage_seconds_total")
	if n != 1 {
		t.Errorf("%d CPU series, want only the answering guest's", n)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the scrape took %s with a 200ms timeout", d)
	}
}

// No guest: no series, and no read.
func TestDomainStatsNoGuests(t *testing.T) {
	c := metrics.NewDomainStats([]metrics.GuestLister{guests{}})
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Errorf("%d series without guests", n)
	}
}
