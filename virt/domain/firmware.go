package domain

import (
	"path"

	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// convertOS writes <os> (machine type, firmware, kernel boot) and the SMBIOS
// <sysinfo> the guest reads its UUID and serial from.
func (c *converter) convertOS() error {
	machine := c.arch.machine
	if c.spec.Machine != nil && c.spec.Machine.Type != "" {
		machine = c.spec.Machine.Type
	}
	c.p.osType = libvirtxml.DomainOSType{Arch: c.arch.libvirt, Machine: machine, Type: "hvm"}
	os := &c.p.os
	os.Type = &c.p.osType
	c.dom.OS = os

	fw := c.spec.Firmware
	if fw == nil {
		fw = &virtv1.Firmware{}
	}
	if bl := fw.Bootloader; bl != nil && bl.EFI != nil {
		c.efi = true
		c.convertEFI(os, bl.EFI)
	} else if bl != nil && bl.BIOS != nil && enabled(bl.BIOS.UseSerial, false) {
		// SeaBIOS prints to the serial console, so the boot is visible in
		// virtctl console.
		os.BIOS = &libvirtxml.DomainBIOS{UseSerial: "yes"}
	}
	if err := c.convertKernelBoot(os, fw.KernelBoot); err != nil {
		return err
	}
	if c.vmi.ShouldStartPaused() {
		// A VMI started paused gets time to open the console and enter the
		// firmware menu once it is resumed, as in KubeVirt.
		os.BootMenu = &libvirtxml.DomainBootMenu{Enable: "yes", Timeout: "10000"}
	}
	// s390x has no SMBIOS.
	if c.arch.goarch != "s390x" {
		c.p.smbios.Mode = "sysinfo"
		os.SMBios = &c.p.smbios
		c.p.sysinfo[0].SMBIOS = c.smbios(fw)
		c.dom.SysInfo = c.p.sysinfo[:]
	}
	return nil
}

func (c *converter) convertEFI(os *libvirtxml.DomainOS, efi *virtv1.EFI) {
	fwp := &c.host.Paths.Firmware
	// KubeVirt's EFI default is secure boot on.
	secure := enabled(efi.SecureBoot, true)
	code, vars := orDefault(fwp.EFICode, defaultEFICode), orDefault(fwp.EFIVars, defaultEFIVars)
	if secure {
		code, vars = orDefault(fwp.SecureBootCode, defaultSecureBootCode), orDefault(fwp.SecureBootVars, defaultSecureBootVars)
	}
	os.Loader = &libvirtxml.DomainLoader{Path: code, Readonly: "yes", Secure: yesNo(secure), Type: "pflash"}
	// The variable store is per VMI: libvirt copies the template on first
	// boot. spec.domain.firmware.bootloader.efi.persistent only changes where
	// the launcher mounts NVRAMDir (backend storage instead of the pod).
	os.NVRam = &libvirtxml.DomainNVRam{
		NVRam:    path.Join(orDefault(c.host.Paths.NVRAMDir, defaultNVRAMDir), c.vmi.Name+"_VARS.fd"),
		Template: vars,
	}
}

func (c *converter) convertKernelBoot(os *libvirtxml.DomainOS, kb *virtv1.KernelBoot) error {
	if kb == nil {
		return nil
	}
	dir := orDefault(c.host.Paths.KernelBootDir, defaultKernelBootDir)
	// The kernel-boot container's files are copied into the launcher by an
	// init container, keeping only their base names, as KubeVirt does.
	if kb.Container != nil {
		if kb.Container.KernelPath != "" {
			os.Kernel = path.Join(dir, path.Base(kb.Container.KernelPath))
		}
		if kb.Container.InitrdPath != "" {
			os.Initrd = path.Join(dir, path.Base(kb.Container.InitrdPath))
		}
	}
	if kb.KernelArgs != "" {
		if os.Kernel == "" {
			return convErr(ErrInvalidField, pathFirmware+".kernelBoot.kernelArgs", "kernel arguments need a kernel (kernelBoot.container.kernelPath)")
		}
		os.Cmdline = kb.KernelArgs
	}
	return nil
}

func (c *converter) smbios(fw *virtv1.Firmware) *libvirtxml.DomainSysInfoSMBIOS {
	s := &c.opts.smbios
	entries := c.p.entries[:0]
	add := func(name, value string) {
		if value != "" {
			entries = append(entries, libvirtxml.DomainSysInfoEntry{Name: name, Value: value})
		}
	}
	add("manufacturer", s.Manufacturer)
	add("product", s.Product)
	add("version", s.Version)
	add("serial", fw.Serial)
	add("uuid", c.dom.UUID)
	add("sku", s.SKU)
	add("family", s.Family)
	c.p.system.Entry = entries
	info := &c.p.sysSMB
	info.System = &c.p.system
	if ch := c.spec.Chassis; ch != nil {
		var ce []libvirtxml.DomainSysInfoEntry
		for _, e := range [...][2]string{{"manufacturer", ch.Manufacturer}, {"version", ch.Version}, {"serial", ch.Serial}, {"asset", ch.Asset}, {"sku", ch.Sku}} {
			if e[1] != "" {
				ce = append(ce, libvirtxml.DomainSysInfoEntry{Name: e[0], Value: e[1]})
			}
		}
		if len(ce) > 0 {
			info.Chassis = &libvirtxml.DomainSysInfoChassis{Entry: ce}
		}
	}
	return info
}
