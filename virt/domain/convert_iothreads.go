package domain

import (
	"strconv"

	k8sv1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// ioThreadPlan is how disk IO is spread over QEMU IO threads, following
// KubeVirt: IO threads exist when spec.domain.ioThreadsPolicy is set or a disk
// asks for dedicatedIOThread. Thread IDs 1..auto are shared round-robin by
// the other virtio disks; each dedicated disk gets its own ID after them.
type ioThreadPlan struct {
	used          bool
	supplemental  bool
	total         uint
	auto          uint
	nextAuto      uint
	nextDedicated uint
	scsiDedicated bool // a SCSI disk asked for a dedicated thread: the controller gets one
}

func (c *converter) planIOThreads() error {
	policy := c.spec.IOThreadsPolicy
	var dedicated, auto uint
	for i := range c.spec.Devices.Disks {
		d := &c.spec.Devices.Disks[i]
		if enabled(d.DedicatedIOThread, false) {
			dedicated++
			if (d.LUN != nil && orBus(d.LUN.Bus, virtv1.DiskBusSCSI) == virtv1.DiskBusSCSI) ||
				(d.Disk != nil && d.Disk.Bus == virtv1.DiskBusSCSI) || (d.CDRom != nil && d.CDRom.Bus == virtv1.DiskBusSCSI) {
				c.ioThreads.scsiDedicated = true
			}
		} else {
			auto++
		}
	}
	if policy == nil && dedicated == 0 {
		return nil
	}
	p := &c.ioThreads
	p.used = true
	var limit uint
	switch {
	case policy == nil || *policy == virtv1.IOThreadsPolicyShared:
		limit = 1
	case *policy == virtv1.IOThreadsPolicyAuto:
		cpu := c.spec.CPU
		if cpu != nil && cpu.DedicatedCPUPlacement && cpu.IsolateEmulatorThread {
			// The IO thread shares the emulator's dedicated CPU.
			limit = 1
		} else {
			limit = 2 * cpuRequestOrLimit(&c.spec.Resources)
		}
	case *policy == virtv1.IOThreadsPolicySupplementalPool:
		io := c.spec.IOThreads
		if io == nil || io.SupplementalPoolThreadCount == nil || *io.SupplementalPoolThreadCount == 0 {
			return convErr(ErrInvalidField, pathDomain+".ioThreads.supplementalPoolThreadCount", "the supplementalPool policy needs a thread count")
		}
		p.supplemental = true
		p.total = uint(*io.SupplementalPoolThreadCount)
		p.nextAuto = 1
		c.dom.IOThreads = p.total
		return nil
	default:
		return convErr(ErrInvalidField, pathDomain+".ioThreadsPolicy", "unknown policy "+strconv.Quote(string(*policy))+" (want shared, auto or supplementalPool)")
	}
	if auto+dedicated > limit {
		// Dedicated threads are honoured; the shared pool shrinks, but
		// keeps at least one thread.
		auto = max(int2uint(int(limit)-int(dedicated)), 1)
	}
	p.auto, p.total = auto, auto+dedicated
	p.nextAuto, p.nextDedicated = 1, auto+1
	c.dom.IOThreads = p.total
	return nil
}

func int2uint(i int) uint {
	if i < 0 {
		return 0
	}
	return uint(i)
}

// cpuRequestOrLimit is the CPU request, else the limit, rounded up; 1 if
// neither is set.
func cpuRequestOrLimit(r *virtv1.ResourceRequirements) uint {
	if q, ok := r.Requests[k8sv1.ResourceCPU]; ok && q.Value() > 0 {
		return uint(q.Value())
	}
	if q, ok := r.Limits[k8sv1.ResourceCPU]; ok && q.Value() > 0 {
		return uint(q.Value())
	}
	return 1
}

// assignIOThread gives a virtio disk its IO thread; only virtio-blk has a
// per-disk thread (SCSI disks share their controller's).
//
// With the supplementalPool policy KubeVirt (on libvirt 10 and later) maps
// every queue of every disk over the whole pool with <driver><iothreads>.
// libvirt 9.0, which virtkit runs, has no such element, so each disk takes
// one pool thread round-robin instead.
func (c *converter) assignIOThread(disk *libvirtxml.DomainDisk, d *virtv1.Disk, slot *uint) {
	p := &c.ioThreads
	if !p.used || disk.Target.Bus != "virtio" {
		return
	}
	var id uint
	switch {
	case p.supplemental:
		id = p.nextAuto
		p.nextAuto = p.nextAuto%p.total + 1
	case enabled(d.DedicatedIOThread, false):
		id = p.nextDedicated
		p.nextDedicated++
	default:
		id = p.nextAuto
		p.nextAuto = p.nextAuto%max(p.auto, 1) + 1
	}
	*slot = id
	disk.Driver.IOThread = slot
}

// convertIOThreadPins pins IO threads when the VMI has dedicated CPUs, as
// KubeVirt does: next to an isolated emulator thread if there is one, else
// spread over the vCPUs' CPUs; supplemental pool threads get CPUs of their
// own from the dedicated CPUs left over.
func (c *converter) convertIOThreadPins() error {
	p := &c.ioThreads
	if !p.used || !c.dedicated || p.total == 0 {
		return nil
	}
	tune := c.dom.CPUTune
	pin := func(thread uint, cpuset string) {
		tune.IOThreadPin = append(tune.IOThreadPin, libvirtxml.DomainCPUTuneIOThreadPin{IOThread: thread, CPUSet: cpuset})
	}
	cpuset := c.host.CPU.DedicatedCPUs
	vcpus := c.vcpus
	switch {
	case p.supplemental:
		for t := uint(1); t <= p.total; t++ {
			if len(c.freeCPUs) == 0 {
				return convErr(ErrMissingHostFact, pathDomain+".ioThreads.supplementalPoolThreadCount", "no dedicated CPU left for IO thread "+strconv.Itoa(int(t)))
			}
			pin(t, strconv.Itoa(c.freeCPUs[0]))
			c.freeCPUs = c.freeCPUs[1:]
		}
	case c.emulatorPin != "":
		pin(1, c.emulatorPin)
	case p.total >= vcpus:
		for t := uint(1); t <= p.total; t++ {
			pin(t, strconv.Itoa(cpuset[t%vcpus]))
		}
	default:
		// Balanced ranges: 3 threads over 8 CPUs pin to 0-2, 3-5, 6-7.
		series := vcpus % p.total
		cur := uint(0)
		for t := uint(1); t <= p.total; t++ {
			n := vcpus / p.total
			if t <= series {
				n++
			}
			var b []byte
			for k := cur; k < cur+n; k++ {
				if k > cur {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, int64(cpuset[k]), 10)
			}
			pin(t, string(b))
			cur += n
		}
	}
	return nil
}

// convertControllers writes the USB, SCSI and virtio-serial controllers
// KubeVirt always lays out, so hotplug finds them in place.
func (c *converter) convertControllers() error {
	ctrls := c.p.controllers[:0]
	usbModel := "none"
	if c.usbNeeded {
		usbModel = "qemu-xhci"
	}
	ctrls = append(ctrls, libvirtxml.DomainController{Type: "usb", Index: c.zero(), Model: usbModel})
	if !c.spec.Devices.DisableHotplug || c.scsiNeeded {
		// SCSI disks can be hotplugged only onto an existing controller.
		sc := libvirtxml.DomainController{Type: "scsi", Index: c.zero(), Model: c.virtioModel}
		if c.ioThreads.used && c.ioThreads.scsiDedicated && !c.ioThreads.supplemental {
			sc.Driver = &libvirtxml.DomainControllerDriver{IOThread: c.ioThreads.nextAuto, Queues: uintPtr(c.vcpus)}
		}
		ctrls = append(ctrls, sc)
	}
	if enabled(c.spec.Devices.AutoattachSerialConsole, true) {
		ctrls = append(ctrls, libvirtxml.DomainController{Type: "virtio-serial", Index: c.zero(), Model: c.virtioModel})
	}
	c.dev.Controllers = ctrls
	return nil
}
