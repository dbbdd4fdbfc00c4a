package fake

import (
	"context"

	"github.com/virtkit/virtkit/virt/domain"
)

// Stats reports synthetic counters; see domain.Manager.Stats. CPU time is
// the running time by the clock plus a fixed tick per call (so that it grows
// under a frozen clock), not split into user and system time; memory is the
// document's (actual and maximum; resident a quarter of it; no balloon
// statistics); disks and interfaces of the live document are listed with
// zero I/O.
func (m *Manager) Stats(ctx context.Context, name string) (*domain.Stats, error) {
	var out *domain.Stats
	err := m.onDomain(ctx, domain.OpStats, name, func(d *fakeDomain) error {
		out = &domain.Stats{Domain: name, State: d.state}
		if d.live == nil {
			return nil
		}
		if d.state == domain.StateRunning {
			d.cpu += m.cpuTick
		}
		out.CPUTime = d.cpu + m.now().Sub(d.started)
		if mem := d.live.Memory; mem != nil {
			kib := domain.MemoryBytes(mem.Value, mem.Unit) >> 10
			out.Memory = domain.MemoryStats{ActualKiB: kib, MaximumKiB: kib, RSSKiB: kib / 4}
		}
		if devs := d.live.Devices; devs != nil {
			for _, disk := range devs.Disks {
				b := domain.BlockStats{}
				if disk.Target != nil {
					b.Name = disk.Target.Dev
				}
				if disk.Source != nil && disk.Source.File != nil {
					b.Path = disk.Source.File.File
				}
				out.Blocks = append(out.Blocks, b)
			}
			for i, iface := range devs.Interfaces {
				n := domain.InterfaceStats{Name: "vnet" + itoa(i)}
				if iface.Target != nil && iface.Target.Dev != "" {
					n.Name = iface.Target.Dev
				}
				out.Interfaces = append(out.Interfaces, n)
			}
		}
		return nil
	})
	return out, err
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + itoa(i%10)
}
