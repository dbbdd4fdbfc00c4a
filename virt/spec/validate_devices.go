package spec

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	virtv1 "kubevirt.io/api/core/v1"
)

// validateFirmware checks bootloader, secure boot, UUID, serial, kernel boot.
func validateFirmware(fp *field.Path, s *virtv1.VirtualMachineInstanceSpec) field.ErrorList {
	fw := s.Domain.Firmware
	if fw == nil {
		return nil
	}
	var errs field.ErrorList
	if fw.UUID != "" && !isUUID(string(fw.UUID)) {
		errs = append(errs, field.Invalid(fp.Child("uuid"), fw.UUID, "must be a UUID such as 5d307ca9-b3ef-428c-8861-06e72d69f223"))
	}
	if fw.Serial != "" {
		if len([]rune(fw.Serial)) > maxSerialLen {
			errs = append(errs, field.TooLong(fp.Child("serial"), fw.Serial, maxSerialLen))
		} else if !serialOK(fw.Serial) {
			errs = append(errs, field.Invalid(fp.Child("serial"), fw.Serial, "must be made up of the characters [A-Za-z0-9_.+-]"))
		}
	}
	if bl := fw.Bootloader; bl != nil {
		bp := fp.Child("bootloader")
		if bl.BIOS != nil && bl.EFI != nil {
			errs = append(errs, field.Invalid(bp, "bios,efi", "must have at most one of bios, efi"))
		}
		if bl.EFI != nil && (bl.EFI.SecureBoot == nil || *bl.EFI.SecureBoot) {
			// Secure boot (on by default with EFI) keeps its variable store
			// in SMM-protected flash; without SMM OVMF will not enforce it.
			if f := s.Domain.Features; f == nil || !featureOn(f.SMM) {
				errs = append(errs, field.Invalid(bp.Child("efi", "secureBoot"), true,
					"secure boot requires spec.domain.features.smm to be enabled"))
			}
		}
		if bl.BIOS != nil && s.Architecture == ArchARM64 {
			errs = append(errs, field.Invalid(bp.Child("bios"), "{}", "arm64 guests boot only with EFI"))
		}
	}
	if kb := fw.KernelBoot; kb != nil {
		kp := fp.Child("kernelBoot")
		if kb.Container == nil {
			if kb.KernelArgs != "" {
				errs = append(errs, field.Invalid(kp.Child("kernelArgs"), kb.KernelArgs, "kernel arguments need a kernel: set kernelBoot.container"))
			}
		} else {
			cp := kp.Child("container")
			if kb.Container.Image == "" {
				errs = append(errs, field.Required(cp.Child("image"), "kernel boot container image is required"))
			}
			if kb.Container.KernelPath == "" && kb.Container.InitrdPath == "" {
				errs = append(errs, field.Required(cp.Child("kernelPath"), "at least one of kernelPath, initrdPath is required"))
			}
			if kb.Container.KernelPath != "" {
				errs = append(errs, validateAbsPath(cp.Child("kernelPath"), kb.Container.KernelPath)...)
			}
			if kb.Container.InitrdPath != "" {
				errs = append(errs, validateAbsPath(cp.Child("initrdPath"), kb.Container.InitrdPath)...)
			}
			errs = append(errs, validatePullPolicy(cp.Child("imagePullPolicy"), kb.Container.ImagePullPolicy)...)
		}
	}
	return errs
}

// validateFeatures checks Hyper-V enlightenments.
func validateFeatures(fp *field.Path, s *virtv1.VirtualMachineInstanceSpec) field.ErrorList {
	return validateHyperv(fp, s.Domain.Features)
}

// validateClock checks the clock offset and timer tick policies.
func validateClock(cp *field.Path, c *virtv1.Clock) field.ErrorList {
	if c == nil {
		return nil
	}
	var errs field.ErrorList
	if c.UTC != nil && c.Timezone != nil {
		errs = append(errs, field.Invalid(cp, "utc,timezone", "must have at most one of utc, timezone"))
	}
	t := c.Timer
	if t == nil {
		return errs
	}
	tp := cp.Child("timer")
	if t.HPET != nil {
		switch t.HPET.TickPolicy {
		case "", virtv1.HPETTickPolicyDelay, virtv1.HPETTickPolicyCatchup, virtv1.HPETTickPolicyMerge, virtv1.HPETTickPolicyDiscard:
		default:
			errs = append(errs, field.NotSupported(tp.Child("hpet", "tickPolicy"), t.HPET.TickPolicy, []string{"delay", "catchup", "merge", "discard"}))
		}
	}
	if t.PIT != nil {
		switch t.PIT.TickPolicy {
		case "", virtv1.PITTickPolicyDelay, virtv1.PITTickPolicyCatchup, virtv1.PITTickPolicyDiscard:
		default:
			errs = append(errs, field.NotSupported(tp.Child("pit", "tickPolicy"), t.PIT.TickPolicy, []string{"delay", "catchup", "discard"}))
		}
	}
	if t.RTC != nil {
		switch t.RTC.TickPolicy {
		case "", virtv1.RTCTickPolicyDelay, virtv1.RTCTickPolicyCatchup:
		default:
			errs = append(errs, field.NotSupported(tp.Child("rtc", "tickPolicy"), t.RTC.TickPolicy, []string{"delay", "catchup"}))
		}
		switch t.RTC.Track {
		case "", virtv1.TrackGuest, virtv1.TrackWall:
		default:
			errs = append(errs, field.NotSupported(tp.Child("rtc", "track"), t.RTC.Track, []string{"guest", "wall"}))
		}
	}
	return errs
}

// validateDevices checks the devices that are neither disks nor NICs.
func validateDevices(c *config, p *field.Path, s *virtv1.VirtualMachineInstanceSpec) field.ErrorList {
	var errs field.ErrorList
	dp := p.Child("domain", "devices")
	d := &s.Domain.Devices
	arch := c.effectiveArch(s)

	if w := d.Watchdog; w != nil {
		wp := dp.Child("watchdog")
		if w.Name == "" {
			errs = append(errs, field.Required(wp.Child("name"), "watchdog name is required"))
		}
		switch {
		case (w.I6300ESB == nil) == (w.Diag288 == nil):
			errs = append(errs, field.Invalid(wp, w.Name, "must have exactly one of i6300esb, diag288"))
		case w.Diag288 != nil && arch != ArchS390X:
			errs = append(errs, field.Invalid(wp.Child("diag288"), "{}", "diag288 is an s390x watchdog; use i6300esb"))
		case w.I6300ESB != nil && arch == ArchS390X:
			errs = append(errs, field.Invalid(wp.Child("i6300esb"), "{}", "i6300esb is a PCI watchdog absent on s390x; use diag288"))
		}
		action, ap := virtv1.WatchdogAction(""), wp
		if w.I6300ESB != nil {
			action, ap = w.I6300ESB.Action, wp.Child("i6300esb", "action")
		} else if w.Diag288 != nil {
			action, ap = w.Diag288.Action, wp.Child("diag288", "action")
		}
		switch action {
		case "", virtv1.WatchdogActionPoweroff, virtv1.WatchdogActionReset, virtv1.WatchdogActionShutdown:
		default:
			errs = append(errs, field.NotSupported(ap, action, []string{"poweroff", "reset", "shutdown"}))
		}
	}

	for i, in := range d.Inputs {
		ip := dp.Child("inputs").Index(i)
		if in.Name == "" {
			errs = append(errs, field.Required(ip.Child("name"), "input device name is required"))
		}
		switch in.Bus {
		case "", virtv1.InputBusUSB, virtv1.InputBusVirtio:
		default:
			errs = append(errs, field.NotSupported(ip.Child("bus"), in.Bus, []string{"usb", "virtio"}))
		}
		switch in.Type {
		case "", virtv1.InputTypeTablet, virtv1.InputTypeKeyboard:
		default:
			errs = append(errs, field.NotSupported(ip.Child("type"), in.Type, []string{"tablet", "keyboard"}))
		}
	}

	if v := d.Video; v != nil && v.Type != "" {
		types := []string{"vga", "cirrus", "virtio", "ramfb", "bochs"}
		if arch != ArchAMD64 {
			types = []string{"virtio", "ramfb"}
		}
		if !contains(types, v.Type) {
			errs = append(errs, field.NotSupported(dp.Child("video", "type"), v.Type, types))
		}
	}

	for i, pd := range d.PanicDevices {
		if pd.Model == nil {
			continue
		}
		switch *pd.Model {
		case virtv1.Hyperv, virtv1.Isa, virtv1.Pvpanic:
		default:
			errs = append(errs, field.NotSupported(dp.Child("panicDevices").Index(i).Child("model"), *pd.Model, []string{"hyperv", "isa", "pvpanic"}))
		}
	}

	names := map[string]bool{}
	for i, hd := range d.HostDevices {
		hp := dp.Child("hostDevices").Index(i)
		switch {
		case hd.Name == "":
			errs = append(errs, field.Required(hp.Child("name"), "host device name is required"))
		case names[hd.Name]:
			errs = append(errs, field.Duplicate(hp.Child("name"), hd.Name))
		}
		names[hd.Name] = true
		if hd.DeviceName == "" && hd.ClaimRequest == nil {
			errs = append(errs, field.Required(hp.Child("deviceName"), "the resource name of the host device is required"))
		}
	}
	return errs
}

// validateIOThreads checks the IO thread policy and its pool size.
func validateIOThreads(dp *field.Path, s *virtv1.VirtualMachineInstanceSpec) field.ErrorList {
	var errs field.ErrorList
	pol := s.Domain.IOThreadsPolicy
	if pol != nil {
		switch *pol {
		case virtv1.IOThreadsPolicyShared, virtv1.IOThreadsPolicyAuto, virtv1.IOThreadsPolicySupplementalPool:
		default:
			errs = append(errs, field.NotSupported(dp.Child("ioThreadsPolicy"), *pol, []string{"shared", "auto", "supplementalPool"}))
		}
	}
	pool := pol != nil && *pol == virtv1.IOThreadsPolicySupplementalPool
	var count *uint32
	if s.Domain.IOThreads != nil {
		count = s.Domain.IOThreads.SupplementalPoolThreadCount
	}
	switch {
	case pool && (count == nil || *count == 0):
		errs = append(errs, field.Required(dp.Child("ioThreads", "supplementalPoolThreadCount"),
			"must be greater than 0 with ioThreadsPolicy supplementalPool"))
	case !pool && count != nil:
		errs = append(errs, field.Invalid(dp.Child("ioThreads", "supplementalPoolThreadCount"), *count,
			"is only allowed with ioThreadsPolicy supplementalPool"))
	}
	return errs
}
