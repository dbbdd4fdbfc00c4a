package domain

import (
	"strconv"

	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// convertFeatures writes <features>: ACPI, APIC, SMM, Hyper-V
// enlightenments, KVM hiding and paravirtual spinlocks.
func (c *converter) convertFeatures() error {
	f := c.spec.Features
	if f == nil {
		// The API's defaulting gives every VMI an empty Features, whose
		// ACPI is on.
		f = &virtv1.Features{}
	}
	fl := &c.p.features
	if f.ACPI.Enabled == nil || *f.ACPI.Enabled {
		// Without ACPI the guest cannot be shut down gracefully; virt-handler
		// then treats "destroyed" as a normal end (see Status).
		fl.ACPI = &libvirtxml.DomainFeature{}
	}
	if f.APIC != nil && (f.APIC.Enabled == nil || *f.APIC.Enabled) {
		fl.APIC = &libvirtxml.DomainFeatureAPIC{}
		if f.APIC.EndOfInterrupt {
			fl.APIC.EOI = "on"
		}
	}
	// Secure boot firmware needs SMM to protect its variable store, so it
	// is forced on for secure boot whatever spec.domain.features.smm says.
	secureBoot := c.dom.OS.Loader != nil && c.dom.OS.Loader.Secure == "yes"
	if secureBoot || f.SMM != nil {
		fl.SMM = &libvirtxml.DomainFeatureSMM{State: onOff(secureBoot || featureOn(f.SMM))}
	}
	if f.Pvspinlock != nil {
		fl.PVSpinlock = &libvirtxml.DomainFeatureState{State: onOff(featureOn(f.Pvspinlock))}
	}
	if f.KVM != nil && f.KVM.Hidden {
		fl.KVM = &libvirtxml.DomainFeatureKVM{Hidden: &libvirtxml.DomainFeatureState{State: "on"}}
	}
	if c.dedicated && !c.host.Emulation {
		// Tell the guest its vCPUs never share a host CPU (KubeVirt does this
		// for every dedicated placement); it is a KVM paravirt hint, which
		// means nothing under emulation.
		if fl.KVM == nil {
			fl.KVM = &libvirtxml.DomainFeatureKVM{}
		}
		fl.KVM.HintDedicated = &libvirtxml.DomainFeatureState{State: "on"}
	}
	if f.HypervPassthrough != nil && enabled(f.HypervPassthrough.Enabled, false) {
		if f.Hyperv != nil {
			return convErr(ErrInvalidField, pathDomain+".features.hypervPassthrough", "cannot be combined with features.hyperv")
		}
		fl.HyperV = &libvirtxml.DomainFeatureHyperV{Mode: "passthrough"}
	} else if f.Hyperv != nil {
		if err := c.convertHyperV(fl, f.Hyperv); err != nil {
			return err
		}
	}
	c.dom.Features = fl
	return nil
}

func hvState(f *virtv1.FeatureState) *libvirtxml.DomainFeatureState {
	if f == nil {
		return nil
	}
	return &libvirtxml.DomainFeatureState{State: onOff(featureOn(f))}
}

func (c *converter) convertHyperV(fl *libvirtxml.DomainFeatureList, hv *virtv1.FeatureHyperv) error {
	x := &libvirtxml.DomainFeatureHyperV{
		Relaxed:         hvState(hv.Relaxed),
		VAPIC:           hvState(hv.VAPIC),
		VPIndex:         hvState(hv.VPIndex),
		Runtime:         hvState(hv.Runtime),
		Synic:           hvState(hv.SyNIC),
		Reset:           hvState(hv.Reset),
		Frequencies:     hvState(hv.Frequencies),
		ReEnlightenment: hvState(hv.Reenlightenment),
		IPI:             hvState(hv.IPI),
		EVMCS:           hvState(hv.EVMCS),
	}
	if s := hv.Spinlocks; s != nil {
		on := featureOn(&s.FeatureState)
		x.Spinlocks = &libvirtxml.DomainFeatureHyperVSpinlocks{DomainFeatureState: libvirtxml.DomainFeatureState{State: onOff(on)}}
		if on {
			// 4096 is the API's default retry count.
			x.Spinlocks.Retries = 4096
			if s.Retries != nil {
				x.Spinlocks.Retries = uint(*s.Retries)
			}
		}
	}
	if t := hv.SyNICTimer; t != nil {
		x.STimer = &libvirtxml.DomainFeatureHyperVSTimer{DomainFeatureState: libvirtxml.DomainFeatureState{State: onOff(featureOn(&t.FeatureState))}}
		if t.Direct != nil {
			x.STimer.Direct = hvState(t.Direct)
		}
	}
	if v := hv.VendorID; v != nil {
		on := featureOn(&v.FeatureState)
		x.VendorId = &libvirtxml.DomainFeatureHyperVVendorId{DomainFeatureState: libvirtxml.DomainFeatureState{State: onOff(on)}}
		if on {
			x.VendorId.Value = v.VendorID
		}
	}
	if t := hv.TLBFlush; t != nil {
		// libvirt 9.0, which virtkit runs, knows only the flat
		// <tlbflush state=.../>; direct and extended flushes came in 9.1.
		if t.Direct != nil || t.Extended != nil {
			return convErr(ErrNotImplemented, pathDomain+".features.hyperv.tlbflush", "direct and extended TLB flush need libvirt 9.1; virtkit runs 9.0")
		}
		x.TLBFlush = &libvirtxml.DomainFeatureHyperVTLBFlush{DomainFeatureState: libvirtxml.DomainFeatureState{State: onOff(featureOn(&t.FeatureState))}}
	}
	if featureOn(hv.EVMCS) && c.arch.goarch == "amd64" {
		// Enlightened VMCS is nested virtualisation for Hyper-V guests: it
		// needs VMX exposed to the guest, which KubeVirt requires for it.
		if !hasCPUFeature(c.dom.CPU.Features, "vmx") {
			c.dom.CPU.Features = append(c.dom.CPU.Features, libvirtxml.DomainCPUFeature{Name: "vmx", Policy: "require"})
		}
	}
	fl.HyperV = x
	return nil
}

func hasCPUFeature(fs []libvirtxml.DomainCPUFeature, name string) bool {
	for _, f := range fs {
		if f.Name == name {
			return true
		}
	}
	return false
}

// convertClock writes <clock>: the offset the guest RTC starts from and its
// timers. An unset clock is UTC, as in KubeVirt.
func (c *converter) convertClock() error {
	clock := &c.p.clock
	clock.Offset = "utc"
	c.dom.Clock = clock
	cl := c.spec.Clock
	if cl == nil {
		return nil
	}
	switch {
	case cl.UTC != nil && cl.Timezone != nil:
		return convErr(ErrInvalidField, pathDomain+".clock", "utc and timezone are mutually exclusive")
	case cl.Timezone != nil:
		clock.Offset, clock.TimeZone = "timezone", string(*cl.Timezone)
	case cl.UTC != nil && cl.UTC.OffsetSeconds != nil:
		clock.Adjustment = strconv.Itoa(*cl.UTC.OffsetSeconds)
	}
	t := cl.Timer
	if t == nil {
		return nil
	}
	timers := make([]libvirtxml.DomainTimer, 0, 5)
	if t.RTC != nil {
		timers = append(timers, libvirtxml.DomainTimer{Name: "rtc", Present: yesNo(enabled(t.RTC.Enabled, true)), TickPolicy: string(t.RTC.TickPolicy), Track: string(t.RTC.Track)})
	}
	if t.PIT != nil {
		timers = append(timers, libvirtxml.DomainTimer{Name: "pit", Present: yesNo(enabled(t.PIT.Enabled, true)), TickPolicy: string(t.PIT.TickPolicy)})
	}
	if t.HPET != nil {
		timers = append(timers, libvirtxml.DomainTimer{Name: "hpet", Present: yesNo(enabled(t.HPET.Enabled, true)), TickPolicy: string(t.HPET.TickPolicy)})
	}
	if t.KVM != nil {
		timers = append(timers, libvirtxml.DomainTimer{Name: "kvmclock", Present: yesNo(enabled(t.KVM.Enabled, true))})
	}
	if t.Hyperv != nil {
		timers = append(timers, libvirtxml.DomainTimer{Name: "hypervclock", Present: yesNo(enabled(t.Hyperv.Enabled, true))})
	}
	clock.Timer = timers
	return nil
}
