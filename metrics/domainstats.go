package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/virtkit/virtkit/virt/domain"
)

// Guest is one VMI's domain as a virt-handler runs it: what its series are
// labelled with and how its counters are read.
type Guest struct {
	// Namespace and Name are the VMI's; Node is the handler's node.
	Namespace, Name, Node string
	// Stats reads the domain's counters (domain.Manager.Stats).
	Stats func(ctx context.Context) (*domain.Stats, error)
	// Drives maps a disk's source path, as the domain names it, to the VMI
	// volume it serves: the drive label. A disk it does not map is
	// labelled with its target device (vda).
	Drives map[string]string
	// Interfaces maps a host-side network device (tap0) to the VMI
	// interface and network it serves. A device it does not map is
	// labelled with its own name and no network.
	Interfaces map[string]GuestInterface
}

// GuestInterface names the VMI interface behind a host-side device.
type GuestInterface struct {
	// Interface is spec.domain.devices.interfaces[].name: the interface label.
	Interface string
	// Network is spec.networks[].name: the network label.
	Network string
}

// GuestLister lists the guests a handler runs now. controllers/handler's
// Reconciler is one.
type GuestLister interface {
	Guests() []Guest
}

// DomainStats is virt-handler's per-VMI collector: CPU, memory, block and
// network counters of every running guest, read from its domain when
// Prometheus scrapes (no polling loop), under KubeVirt's names and labels
// (node, namespace, name; drive for disks; interface and network for
// NICs). Series a domain does not report are left out: the balloon's
// statistics without a balloon driver, the CPU time split where the driver
// does not give it. A guest that does not answer within the scrape's
// timeout is left out of that scrape.
type DomainStats struct {
	listers []GuestLister
	o       options

	cpu, memory, block, net []domainSeries
}

var _ prometheus.Collector = (*DomainStats)(nil)

// domainSeries is one series and how a value comes out of the statistics;
// the value function reports false when the domain did not report it.
type domainSeries struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
	// Exactly one of these is set, after the series' kind.
	guest func(*domain.Stats) (float64, bool)
	block func(domain.BlockStats) float64
	net   func(domain.InterfaceStats) float64
}

// NewDomainStats returns the collector over the guests of listers (one per
// handler; virt-local runs one per node). Register it into the registry
// the handler serves.
func NewDomainStats(listers []GuestLister, opts ...Option) *DomainStats {
	vmi := []string{"node", "namespace", "name"}
	drive := append(append([]string(nil), vmi...), "drive")
	iface := append(append([]string(nil), vmi...), "interface", "network")
	desc := func(name, help string, labels []string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	seconds := func(d time.Duration) float64 { return d.Seconds() }
	bytes := func(kib uint64) (float64, bool) { return float64(kib) * 1024, kib != 0 }
	counter, gauge := prometheus.CounterValue, prometheus.GaugeValue
	c := &DomainStats{listers: listers, o: newOptions(opts)}
	c.cpu = []domainSeries{
		{desc: desc("kubevirt_vmi_cpu_usage_seconds_total", "Total CPU time spent in all modes (sum of both vcpu and hypervisor usage).", vmi), typ: counter,
			guest: func(s *domain.Stats) (float64, bool) { return seconds(s.CPUTime), true }},
		{desc: desc("kubevirt_vmi_cpu_user_usage_seconds_total", "Total CPU time spent in user mode.", vmi), typ: counter,
			guest: func(s *domain.Stats) (float64, bool) { return seconds(s.CPUUser), s.CPUUser != 0 }},
		{desc: desc("kubevirt_vmi_cpu_system_usage_seconds_total", "Total CPU time spent in system mode.", vmi), typ: counter,
			guest: func(s *domain.Stats) (float64, bool) { return seconds(s.CPUSystem), s.CPUSystem != 0 }},
	}
	c.memory = []domainSeries{
		{desc: desc("kubevirt_vmi_memory_resident_bytes", "Resident set size of the process running the domain.", vmi), typ: gauge,
			guest: func(s *domain.Stats) (float64, bool) { return bytes(s.Memory.RSSKiB) }},
		{desc: desc("kubevirt_vmi_memory_domain_bytes", "The amount of memory in bytes allocated to the domain. The `memory` value in domain xml file.", vmi), typ: gauge,
			guest: func(s *domain.Stats) (float64, bool) { return bytes(s.Memory.MaximumKiB) }},
		{desc: desc("kubevirt_vmi_memory_actual_balloon_bytes", "Current balloon size in bytes.", vmi), typ: gauge,
			guest: func(s *domain.Stats) (float64, bool) { return bytes(s.Memory.ActualKiB) }},
		{desc: desc("kubevirt_vmi_memory_available_bytes", "Amount of usable memory as seen by the domain. This value may not be accurate if a balloon driver is in use or if the guest OS does not initialize all assigned pages", vmi), typ: gauge,
			guest: func(s *domain.Stats) (float64, bool) { return bytes(s.Memory.AvailableKiB) }},
		{desc: desc("kubevirt_vmi_memory_usable_bytes", "The amount of memory which can be reclaimed by balloon without pushing the guest system to swap, corresponds to 'Available' in /proc/meminfo.", vmi), typ: gauge,
			guest: func(s *domain.Stats) (float64, bool) { return bytes(s.Memory.UsableKiB) }},
		{desc: desc("kubevirt_vmi_memory_unused_bytes", "The amount of memory left completely unused by the system. Memory that is available but used for reclaimable caches should NOT be reported as free.", vmi), typ: gauge,
			guest: func(s *domain.Stats) (float64, bool) { return bytes(s.Memory.UnusedKiB) }},
	}
	c.block = []domainSeries{
		{desc: desc("kubevirt_vmi_storage_read_traffic_bytes_total", "Total number of bytes read from storage.", drive), typ: counter,
			block: func(b domain.BlockStats) float64 { return float64(b.ReadBytes) }},
		{desc: desc("kubevirt_vmi_storage_write_traffic_bytes_total", "Total number of written bytes.", drive), typ: counter,
			block: func(b domain.BlockStats) float64 { return float64(b.WriteBytes) }},
		{desc: desc("kubevirt_vmi_storage_iops_read_total", "Total number of I/O read operations.", drive), typ: counter,
			block: func(b domain.BlockStats) float64 { return float64(b.ReadRequests) }},
		{desc: desc("kubevirt_vmi_storage_iops_write_total", "Total number of I/O write operations.", drive), typ: counter,
			block: func(b domain.BlockStats) float64 { return float64(b.WriteRequests) }},
		{desc: desc("kubevirt_vmi_storage_read_times_seconds_total", "Total time spent on read operations.", drive), typ: counter,
			block: func(b domain.BlockStats) float64 { return seconds(b.ReadTime) }},
		{desc: desc("kubevirt_vmi_storage_write_times_seconds_total", "Total time spent on write operations.", drive), typ: counter,
			block: func(b domain.BlockStats) float64 { return seconds(b.WriteTime) }},
		{desc: desc("kubevirt_vmi_storage_flush_requests_total", "Total storage flush requests.", drive), typ: counter,
			block: func(b domain.BlockStats) float64 { return float64(b.FlushRequests) }},
		{desc: desc("kubevirt_vmi_storage_flush_times_seconds_total", "Total time spent on cache flushing.", drive), typ: counter,
			block: func(b domain.BlockStats) float64 { return seconds(b.FlushTime) }},
	}
	c.net = []domainSeries{
		{desc: desc("kubevirt_vmi_network_receive_bytes_total", "Total network traffic received in bytes.", iface), typ: counter,
			net: func(n domain.InterfaceStats) float64 { return float64(n.RxBytes) }},
		{desc: desc("kubevirt_vmi_network_transmit_bytes_total", "Total network traffic transmitted in bytes.", iface), typ: counter,
			net: func(n domain.InterfaceStats) float64 { return float64(n.TxBytes) }},
		{desc: desc("kubevirt_vmi_network_receive_packets_total", "Total network traffic received packets.", iface), typ: counter,
			net: func(n domain.InterfaceStats) float64 { return float64(n.RxPackets) }},
		{desc: desc("kubevirt_vmi_network_transmit_packets_total", "Total network traffic transmitted packets.", iface), typ: counter,
			net: func(n domain.InterfaceStats) float64 { return float64(n.TxPackets) }},
		{desc: desc("kubevirt_vmi_network_receive_errors_total", "Total network received error packets.", iface), typ: counter,
			net: func(n domain.InterfaceStats) float64 { return float64(n.RxErrors) }},
		{desc: desc("kubevirt_vmi_network_transmit_errors_total", "Total network transmitted error packets.", iface), typ: counter,
			net: func(n domain.InterfaceStats) float64 { return float64(n.TxErrors) }},
		{desc: desc("kubevirt_vmi_network_receive_packets_dropped_total", "The total number of rx packets dropped on vNIC interfaces.", iface), typ: counter,
			net: func(n domain.InterfaceStats) float64 { return float64(n.RxDrops) }},
		{desc: desc("kubevirt_vmi_network_transmit_packets_dropped_total", "The total number of tx packets dropped on vNIC interfaces.", iface), typ: counter,
			net: func(n domain.InterfaceStats) float64 { return float64(n.TxDrops) }},
	}
	return c
}

// Describe sends every series' descriptor.
func (c *DomainStats) Describe(ch chan<- *prometheus.Desc) {
	for _, group := range [][]domainSeries{c.cpu, c.memory, c.block, c.net} {
		for _, s := range group {
			ch <- s.desc
		}
	}
}

// Collect reads every guest's statistics, a few at once, and sends the
// series of those that answered before the scrape's timeout.
func (c *DomainStats) Collect(ch chan<- prometheus.Metric) {
	var guests []Guest
	for _, l := range c.listers {
		guests = append(guests, l.Guests()...)
	}
	if len(guests) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.o.timeout)
	defer cancel()
	type result struct {
		g  Guest
		st *domain.Stats
	}
	// Buffered: a read that outlives the scrape does not block.
	results := make(chan result, len(guests))
	slots := make(chan struct{}, c.o.parallel)
	for _, g := range guests {
		go func() {
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
			case <-ctx.Done():
				results <- result{g: g}
				return
			}
			st, err := g.Stats(ctx)
			if err != nil {
				c.o.log.V(1).Info("guest left out of the scrape", "vmi", g.Namespace+"/"+g.Name, "node", g.Node, "error", err.Error())
			}
			results <- result{g: g, st: st}
		}()
	}
	for range guests {
		select {
		case r := <-results:
			if r.st != nil {
				c.emit(ch, r.g, r.st)
			}
		case <-ctx.Done():
			c.o.log.Info("guests' statistics did not all come within the scrape's timeout", "timeout", c.o.timeout.String())
			return
		}
	}
}

// emit sends one guest's series.
func (c *DomainStats) emit(ch chan<- prometheus.Metric, g Guest, st *domain.Stats) {
	for _, group := range [][]domainSeries{c.cpu, c.memory} {
		for _, s := range group {
			if v, ok := s.guest(st); ok {
				ch <- prometheus.MustNewConstMetric(s.desc, s.typ, v, g.Node, g.Namespace, g.Name)
			}
		}
	}
	for _, b := range st.Blocks {
		drive := g.Drives[b.Path]
		if drive == "" {
			drive = b.Name
		}
		for _, s := range c.block {
			ch <- prometheus.MustNewConstMetric(s.desc, s.typ, s.block(b), g.Node, g.Namespace, g.Name, drive)
		}
	}
	for _, n := range st.Interfaces {
		iface, ok := g.Interfaces[n.Name]
		if !ok {
			iface.Interface = n.Name
		}
		for _, s := range c.net {
			ch <- prometheus.MustNewConstMetric(s.desc, s.typ, s.net(n), g.Node, g.Namespace, g.Name, iface.Interface, iface.Network)
		}
	}
}
