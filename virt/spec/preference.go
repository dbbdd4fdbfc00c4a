package spec

import (
	virtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
)

// applyPreference fills what the spec leaves unset from a preference, as
// KubeVirt's preference applier does. A preference never overrides a value
// the VM sets; that is what makes it a preference.
func applyPreference(s *virtv1.VirtualMachineInstanceSpec, p *instancetypev1beta1.VirtualMachinePreferenceSpec) {
	if p == nil {
		return
	}
	if p.CPU != nil && len(p.CPU.PreferredCPUFeatures) > 0 {
		if s.Domain.CPU == nil {
			s.Domain.CPU = &virtv1.CPU{}
		}
		for _, f := range p.CPU.PreferredCPUFeatures {
			if !hasCPUFeature(s.Domain.CPU.Features, f.Name) {
				s.Domain.CPU.Features = append(s.Domain.CPU.Features, f)
			}
		}
	}
	applyDevicePreferences(s, p.Devices)
	applyFeaturePreferences(s, p.Features)
	applyFirmwarePreferences(s, p.Firmware)
	if p.Machine != nil && p.Machine.PreferredMachineType != "" && (s.Domain.Machine == nil || s.Domain.Machine.Type == "") {
		s.Domain.Machine = &virtv1.Machine{Type: p.Machine.PreferredMachineType}
	}
	if c := p.Clock; c != nil {
		if c.PreferredClockOffset != nil && (s.Domain.Clock == nil || (s.Domain.Clock.UTC == nil && s.Domain.Clock.Timezone == nil)) {
			if s.Domain.Clock == nil {
				s.Domain.Clock = &virtv1.Clock{}
			}
			s.Domain.Clock.ClockOffset = *c.PreferredClockOffset.DeepCopy()
		}
		if c.PreferredTimer != nil && (s.Domain.Clock == nil || s.Domain.Clock.Timer == nil) {
			if s.Domain.Clock == nil {
				s.Domain.Clock = &virtv1.Clock{}
			}
			s.Domain.Clock.Timer = c.PreferredTimer.DeepCopy()
		}
	}
	if p.PreferredSubdomain != nil && s.Subdomain == "" {
		s.Subdomain = *p.PreferredSubdomain
	}
	if p.PreferredTerminationGracePeriodSeconds != nil && s.TerminationGracePeriodSeconds == nil {
		g := *p.PreferredTerminationGracePeriodSeconds
		s.TerminationGracePeriodSeconds = &g
	}
	if p.PreferredArchitecture != nil && s.Architecture == "" {
		s.Architecture = *p.PreferredArchitecture
	}
}

func hasCPUFeature(fs []virtv1.CPUFeature, name string) bool {
	for _, f := range fs {
		if f.Name == name {
			return true
		}
	}
	return false
}

func fillBool(dst **bool, pref *bool) {
	if *dst == nil && pref != nil {
		v := *pref
		*dst = &v
	}
}

func applyDevicePreferences(s *virtv1.VirtualMachineInstanceSpec, p *instancetypev1beta1.DevicePreferences) {
	if p == nil {
		return
	}
	d := &s.Domain.Devices
	fillBool(&d.AutoattachGraphicsDevice, p.PreferredAutoattachGraphicsDevice)
	fillBool(&d.AutoattachMemBalloon, p.PreferredAutoattachMemBalloon)
	fillBool(&d.AutoattachPodInterface, p.PreferredAutoattachPodInterface)
	fillBool(&d.AutoattachSerialConsole, p.PreferredAutoattachSerialConsole)
	fillBool(&d.AutoattachInputDevice, p.PreferredAutoattachInputDevice)
	fillBool(&d.UseVirtioTransitional, p.PreferredUseVirtioTransitional)
	fillBool(&d.BlockMultiQueue, p.PreferredBlockMultiQueue)
	fillBool(&d.NetworkInterfaceMultiQueue, p.PreferredNetworkInterfaceMultiQueue)
	if p.PreferredDisableHotplug != nil && !d.DisableHotplug {
		d.DisableHotplug = *p.PreferredDisableHotplug
	}
	if p.PreferredRng != nil && d.Rng == nil {
		d.Rng = p.PreferredRng.DeepCopy()
	}
	if p.PreferredTPM != nil && d.TPM == nil {
		d.TPM = p.PreferredTPM.DeepCopy()
	}
	for i := range d.Disks {
		disk := &d.Disks[i]
		// A disk without a target is a disk; make it one so the preferred
		// bus can apply, as KubeVirt does.
		if disk.Disk == nil && disk.CDRom == nil && disk.LUN == nil {
			disk.Disk = &virtv1.DiskTarget{}
		}
		switch {
		case disk.Disk != nil && disk.Disk.Bus == "":
			disk.Disk.Bus = p.PreferredDiskBus
		case disk.CDRom != nil && disk.CDRom.Bus == "":
			disk.CDRom.Bus = p.PreferredCdromBus
		case disk.LUN != nil && disk.LUN.Bus == "":
			disk.LUN.Bus = p.PreferredLunBus
		}
		if p.PreferredDiskDedicatedIoThread != nil && disk.DedicatedIOThread == nil && disk.Disk != nil &&
			(disk.Disk.Bus == "" || disk.Disk.Bus == virtv1.DiskBusVirtio) {
			v := *p.PreferredDiskDedicatedIoThread
			disk.DedicatedIOThread = &v
		}
		if disk.Cache == "" {
			disk.Cache = p.PreferredDiskCache
		}
		if disk.IO == "" {
			disk.IO = p.PreferredDiskIO
		}
		if disk.BlockSize == nil && p.PreferredDiskBlockSize != nil {
			disk.BlockSize = p.PreferredDiskBlockSize.DeepCopy()
		}
	}
	for i := range d.Interfaces {
		iface := &d.Interfaces[i]
		if iface.Model == "" {
			iface.Model = p.PreferredInterfaceModel
		}
		if p.PreferredInterfaceMasquerade != nil && noBinding(iface) {
			iface.Masquerade = p.PreferredInterfaceMasquerade.DeepCopy()
		}
	}
	for i := range d.Inputs {
		in := &d.Inputs[i]
		if in.Bus == "" {
			in.Bus = p.PreferredInputBus
		}
		if in.Type == "" {
			in.Type = p.PreferredInputType
		}
	}
	for i := range d.PanicDevices {
		if d.PanicDevices[i].Model == nil && p.PreferredPanicDeviceModel != nil {
			m := *p.PreferredPanicDeviceModel
			d.PanicDevices[i].Model = &m
		}
	}
}

func noBinding(i *virtv1.Interface) bool {
	b := i.InterfaceBindingMethod
	return b.Bridge == nil && b.Masquerade == nil && b.SRIOV == nil && b.DeprecatedSlirp == nil &&
		b.DeprecatedMacvtap == nil && b.DeprecatedPasst == nil && b.PasstBinding == nil && i.Binding == nil
}

func applyFeaturePreferences(s *virtv1.VirtualMachineInstanceSpec, p *instancetypev1beta1.FeaturePreferences) {
	if p == nil {
		return
	}
	if s.Domain.Features == nil {
		s.Domain.Features = &virtv1.Features{}
	}
	f := s.Domain.Features
	if p.PreferredAcpi != nil && f.ACPI.Enabled == nil {
		f.ACPI = *p.PreferredAcpi.DeepCopy()
	}
	if p.PreferredApic != nil && f.APIC == nil {
		f.APIC = p.PreferredApic.DeepCopy()
	}
	if p.PreferredHyperv != nil && f.Hyperv == nil {
		f.Hyperv = p.PreferredHyperv.DeepCopy()
	}
	if p.PreferredKvm != nil && f.KVM == nil {
		f.KVM = p.PreferredKvm.DeepCopy()
	}
	if p.PreferredPvspinlock != nil && f.Pvspinlock == nil {
		f.Pvspinlock = p.PreferredPvspinlock.DeepCopy()
	}
	if p.PreferredSmm != nil && f.SMM == nil {
		f.SMM = p.PreferredSmm.DeepCopy()
	}
}

func applyFirmwarePreferences(s *virtv1.VirtualMachineInstanceSpec, p *instancetypev1beta1.FirmwarePreferences) {
	if p == nil {
		return
	}
	if s.Domain.Firmware == nil {
		s.Domain.Firmware = &virtv1.Firmware{}
	}
	fw := s.Domain.Firmware
	if fw.Bootloader != nil {
		return
	}
	switch {
	case isTrue(p.PreferredUseBios):
		fw.Bootloader = &virtv1.Bootloader{BIOS: &virtv1.BIOS{}}
		if p.PreferredUseBiosSerial != nil {
			v := *p.PreferredUseBiosSerial
			fw.Bootloader.BIOS.UseSerial = &v
		}
	case p.PreferredEfi != nil:
		fw.Bootloader = &virtv1.Bootloader{EFI: p.PreferredEfi.DeepCopy()}
	case isTrue(p.DeprecatedPreferredUseEfi):
		efi := &virtv1.EFI{}
		if p.DeprecatedPreferredUseSecureBoot != nil {
			v := *p.DeprecatedPreferredUseSecureBoot
			efi.SecureBoot = &v
		}
		fw.Bootloader = &virtv1.Bootloader{EFI: efi}
	}
}
