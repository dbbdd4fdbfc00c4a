package libvirt

import (
	"context"
	"time"

	"libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/virt/domain"
)

// statsTypes are the groups Stats asks libvirt for; each costs a monitor
// query on a running QEMU, so only what domain.Stats reports.
const statsTypes = libvirt.DOMAIN_STATS_STATE | libvirt.DOMAIN_STATS_CPU_TOTAL |
	libvirt.DOMAIN_STATS_BALLOON | libvirt.DOMAIN_STATS_BLOCK | libvirt.DOMAIN_STATS_INTERFACE

// Stats reads the domain's counters; see domain.Manager.Stats.
func (m *Manager) Stats(ctx context.Context, name string) (*domain.Stats, error) {
	var out *domain.Stats
	err := m.call(ctx, opStats, name, func(c *libvirt.Connect) error {
		d, err := c.LookupDomainByName(name)
		if err != nil {
			return err
		}
		defer d.Free()
		recs, err := c.GetAllDomainStats([]*libvirt.Domain{d}, statsTypes, 0)
		if le, ok := err.(libvirt.Error); ok && le.Code == libvirt.ERR_NO_SUPPORT {
			// Drivers without bulk statistics still report the basics.
			out, err = infoStats(d, name)
			return err
		}
		if err != nil {
			return err
		}
		for i := range recs {
			if out == nil {
				out = convertStats(name, &recs[i])
			}
			recs[i].Domain.Free()
		}
		if out == nil {
			return libvirt.Error{Code: libvirt.ERR_NO_DOMAIN, Message: "no statistics returned for the domain"}
		}
		if out.CPUTime == 0 && out.State == domain.StateRunning {
			// Drivers whose bulk statistics lack cpu.time (test:///)
			// still report it per domain.
			if info, err := d.GetInfo(); err == nil {
				out.CPUTime = time.Duration(info.CpuTime)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func convertStats(name string, r *libvirt.DomainStats) *domain.Stats {
	s := &domain.Stats{Domain: name}
	if r.State != nil && r.State.StateSet {
		s.State = domain.State(r.State.State)
	}
	if c := r.Cpu; c != nil {
		// Unset fields are zero, as domain.Stats wants.
		s.CPUTime, s.CPUUser, s.CPUSystem = time.Duration(c.Time), time.Duration(c.User), time.Duration(c.System)
	}
	if b := r.Balloon; b != nil {
		s.Memory = domain.MemoryStats{ActualKiB: b.Current, MaximumKiB: b.Maximum, RSSKiB: b.Rss,
			AvailableKiB: b.Available, UsableKiB: b.Usable, UnusedKiB: b.Unused}
	}
	for _, b := range r.Block {
		s.Blocks = append(s.Blocks, domain.BlockStats{
			Name: b.Name, Path: b.Path,
			ReadBytes: b.RdBytes, ReadRequests: b.RdReqs, WriteBytes: b.WrBytes, WriteRequests: b.WrReqs, FlushRequests: b.FlReqs,
			ReadTime: time.Duration(b.RdTimes), WriteTime: time.Duration(b.WrTimes), FlushTime: time.Duration(b.FlTimes),
		})
	}
	for _, n := range r.Net {
		s.Interfaces = append(s.Interfaces, domain.InterfaceStats{
			Name: n.Name, RxBytes: n.RxBytes, RxPackets: n.RxPkts, TxBytes: n.TxBytes, TxPackets: n.TxPkts,
			RxErrors: n.RxErrs, RxDrops: n.RxDrop, TxErrors: n.TxErrs, TxDrops: n.TxDrop,
		})
	}
	return s
}

func infoStats(d *libvirt.Domain, name string) (*domain.Stats, error) {
	info, err := d.GetInfo()
	if err != nil {
		return nil, err
	}
	return &domain.Stats{
		Domain:  name,
		State:   domain.State(info.State),
		CPUTime: time.Duration(info.CpuTime),
		Memory:  domain.MemoryStats{ActualKiB: info.Memory, MaximumKiB: info.MaxMem},
	}, nil
}
