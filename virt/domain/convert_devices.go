package domain

import (
	"path"
	"strconv"

	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// guestAgentChannel is the virtio-serial port qemu-guest-agent listens on.
const guestAgentChannel = "org.qemu.guest_agent.0"

// convertDevices writes every device that is neither a disk nor a NIC.
func (c *converter) convertDevices() error {
	d := &c.spec.Devices
	c.convertConsole()
	if err := c.convertGraphics(); err != nil {
		return err
	}
	c.convertGuestAgent()
	if d.Rng != nil {
		// The host's non-blocking pool: never stalls the guest, and is what
		// KubeVirt uses.
		c.dev.RNGs = []libvirtxml.DomainRNG{{
			Model:   c.virtioModel,
			Backend: &libvirtxml.DomainRNGBackend{Random: &libvirtxml.DomainRNGBackendRandom{Device: "/dev/urandom"}},
		}}
	}
	if err := c.convertWatchdog(); err != nil {
		return err
	}
	c.convertMemBalloon()
	c.convertTPM()
	if err := c.convertFilesystems(); err != nil {
		return err
	}
	if err := c.convertVSOCK(); err != nil {
		return err
	}
	if err := c.convertPanic(); err != nil {
		return err
	}
	if err := c.convertSound(); err != nil {
		return err
	}
	return c.convertHostDevices()
}

// convertConsole attaches the serial console as a unix socket (virtctl
// console connects to it through the handler) and, unless turned off, logs
// what the guest writes there so it survives disconnects.
func (c *converter) convertConsole() {
	d := &c.spec.Devices
	if !enabled(d.AutoattachSerialConsole, true) {
		return
	}
	p := &c.host.Paths
	sock := p.SerialConsole
	if sock == "" {
		sock = c.privatePath("/virt-serial0")
	}
	cp := &c.p
	cp.serialUnix = libvirtxml.DomainChardevSourceUNIX{Mode: "bind", Path: sock}
	cp.serialSrc.UNIX = &cp.serialUnix
	cp.serialTarget.Port = c.zero()
	serial := &cp.serial[0]
	serial.Source, serial.Target = &cp.serialSrc, &cp.serialTarget
	if enabled(d.LogSerialConsole, !p.NoSerialConsoleLog) {
		logFile := p.SerialConsoleLog
		if logFile == "" {
			logFile = sock + "-log"
		}
		cp.serialLog = libvirtxml.DomainChardevLog{File: logFile, Append: "on"}
		serial.Log = &cp.serialLog
	}
	c.dev.Serials = cp.serial[:]
	cp.consoleSrc.Pty = &cp.consolePty
	cp.consoleTgt = libvirtxml.DomainConsoleTarget{Type: "serial", Port: c.zero()}
	cp.console[0].Source, cp.console[0].Target = &cp.consoleSrc, &cp.consoleTgt
	c.dev.Consoles = cp.console[:]
}

// convertGraphics attaches a VNC server on a unix socket (virtctl vnc), a
// video card and the input devices.
func (c *converter) convertGraphics() error {
	d := &c.spec.Devices
	graphics := enabled(d.AutoattachGraphicsDevice, true)
	var inputs []libvirtxml.DomainInput
	hasTablet := false
	for i, in := range d.Inputs {
		field := indexed(pathDevices+".inputs", i)
		bus := in.Bus
		switch bus {
		case "":
			bus = virtv1.InputBusUSB
		case virtv1.InputBusUSB, virtv1.InputBusVirtio:
		default:
			return convErr(ErrInvalidField, field+".bus", "unknown bus "+strconv.Quote(string(bus))+" (want usb or virtio)")
		}
		if in.Type != "" && in.Type != virtv1.InputTypeTablet {
			return convErr(ErrInvalidField, field+".type", "only tablet inputs are supported, as in KubeVirt")
		}
		input := libvirtxml.DomainInput{Type: "tablet", Bus: string(bus), Alias: alias(in.Name)}
		if bus == virtv1.InputBusVirtio {
			input.Model = "virtio"
		} else {
			c.usbNeeded = true
		}
		inputs = append(inputs, input)
		hasTablet = true
	}
	if graphics && enabled(d.AutoattachInputDevice, false) && !hasTablet {
		// An absolute pointer keeps the VNC cursor in step with the guest's.
		inputs = append(inputs, libvirtxml.DomainInput{Type: "tablet", Bus: "usb", Alias: alias("default-0")})
		c.usbNeeded = true
	}
	if len(inputs) > 0 {
		c.dev.Inputs = inputs
	}
	if !graphics {
		return nil
	}
	sock := c.host.Paths.VNC
	if sock == "" {
		sock = c.privatePath("/virt-vnc")
	}
	cp := &c.p
	cp.vncSocket.Socket = sock
	cp.listener[0].Socket = &cp.vncSocket
	cp.vnc.Listeners = cp.listener[:]
	cp.graphics[0].VNC = &cp.vnc
	c.dev.Graphics = cp.graphics[:]
	video := libvirtxml.DomainVideoModel{Heads: 1}
	switch {
	case d.Video != nil && d.Video.Type != "":
		video.Type, video.VRam = d.Video.Type, 16384
	case c.arch.goarch != "amd64":
		video.Type = "virtio"
	case c.efi:
		// OVMF drives bochs-display natively; VGA's legacy ROM is useless
		// there.
		video.Type = "bochs"
	default:
		video.Type, video.VRam = "vga", 16384
	}
	cp.video[0].Model = video
	c.dev.Videos = cp.video[:]
	return nil
}

func (c *converter) convertGuestAgent() {
	// Always present: the guest agent may be installed later, and the
	// handler learns it connected from the channel's state.
	cp := &c.p
	cp.chanUnix = libvirtxml.DomainChardevSourceUNIX{Mode: "bind", Path: c.host.Paths.GuestAgent}
	cp.chanSrc.UNIX = &cp.chanUnix
	cp.chanVirtio.Name = guestAgentChannel
	cp.chanTarget.VirtIO = &cp.chanVirtio
	cp.channel[0].Source, cp.channel[0].Target = &cp.chanSrc, &cp.chanTarget
	c.dev.Channels = cp.channel[:]
}

func (c *converter) convertWatchdog() error {
	w := c.spec.Devices.Watchdog
	if w == nil {
		return nil
	}
	field := pathDevices + ".watchdog"
	var model string
	var action virtv1.WatchdogAction
	switch {
	case w.I6300ESB != nil:
		model, action = "i6300esb", w.I6300ESB.Action
	case w.Diag288 != nil:
		if c.arch.goarch != "s390x" {
			return convErr(ErrInvalidField, field+".diag288", "diag288 exists only on s390x")
		}
		model, action = "diag288", w.Diag288.Action
	default:
		return convErr(ErrInvalidField, field, "names no watchdog model (i6300esb or diag288)")
	}
	switch action {
	case "":
		action = virtv1.WatchdogActionReset
	case virtv1.WatchdogActionPoweroff, virtv1.WatchdogActionReset, virtv1.WatchdogActionShutdown:
	default:
		return convErr(ErrInvalidField, field+"."+model+".action", "unknown action "+strconv.Quote(string(action))+" (want poweroff, reset or shutdown)")
	}
	c.dev.Watchdogs = []libvirtxml.DomainWatchdog{{Model: model, Action: string(action), Alias: alias(w.Name)}}
	return nil
}

// convertMemBalloon always writes a balloon element: libvirt would add a
// virtio balloon by itself, so "no balloon" must be said with model none.
func (c *converter) convertMemBalloon() {
	b := &c.p.balloon
	c.dev.MemBalloon = b
	if !enabled(c.spec.Devices.AutoattachMemBalloon, true) {
		b.Model = "none"
		return
	}
	b.Model = c.virtioModel
	if p := c.opts.statsPeriod; p > 0 {
		c.p.stats.Period = p
		b.Stats = &c.p.stats
	}
	// Returning freed guest pages to the host is pointless for memory that
	// is pinned anyway (hugepages, dedicated CPUs), as KubeVirt reasons.
	if !c.hugepages && !c.dedicated {
		b.FreePageReporting = "on"
	}
}

func (c *converter) convertTPM() {
	t := c.spec.Devices.TPM
	if t == nil || !enabled(t.Enabled, true) {
		return
	}
	tpm := libvirtxml.DomainTPM{
		Model:   "tpm-tis",
		Backend: &libvirtxml.DomainTPMBackend{Emulator: &libvirtxml.DomainTPMBackendEmulator{Version: "2.0"}},
	}
	if enabled(t.Persistent, false) {
		// KubeVirt pairs persistence with the CRB interface, the model
		// current guests prefer.
		tpm.Model = "tpm-crb"
		tpm.Backend.Emulator.PersistentState = "yes"
	}
	c.dev.TPMs = []libvirtxml.DomainTPM{tpm}
}

// convertFilesystems shares directories with virtio-fs. virtiofsd runs in
// its own container, started by the launcher pod, so the domain only
// connects to its socket.
func (c *converter) convertFilesystems() error {
	fss := c.spec.Devices.Filesystems
	if len(fss) == 0 {
		return nil
	}
	dir := orDefault(c.host.Paths.VirtiofsDir, defaultVirtiofsDir)
	c.dev.Filesystems = make([]libvirtxml.DomainFilesystem, 0, len(fss))
	for i, fs := range fss {
		if fs.Virtiofs == nil {
			return convErr(ErrInvalidField, indexed(pathDevices+".filesystems", i), "names no filesystem type (virtiofs)")
		}
		if c.volume(fs.Name) == nil {
			return convErr(ErrInvalidField, indexed(pathDevices+".filesystems", i)+".name", "no volume named "+strconv.Quote(fs.Name)+" in spec.volumes")
		}
		c.dev.Filesystems = append(c.dev.Filesystems, libvirtxml.DomainFilesystem{
			AccessMode: "passthrough",
			Driver:     &libvirtxml.DomainFilesystemDriver{Type: "virtiofs", Queue: 1024},
			Source:     &libvirtxml.DomainFilesystemSource{Mount: &libvirtxml.DomainFilesystemSourceMount{Socket: path.Join(dir, fs.Name+".sock")}},
			Target:     &libvirtxml.DomainFilesystemTarget{Dir: fs.Name},
			Alias:      alias(fs.Name),
		})
	}
	return nil
}

func (c *converter) convertVSOCK() error {
	if !enabled(c.spec.Devices.AutoattachVSOCK, false) {
		return nil
	}
	cid := c.opts.vsockCID
	if cid == 0 {
		cid = c.host.VSOCKCID
	}
	// 0-2 are reserved (hypervisor, loopback, host).
	if cid < 3 {
		return convErr(ErrMissingHostFact, pathDevices+".autoattachVSOCK", "no vsock CID assigned (Host.VSOCKCID or WithVSOCKCID, 3 or more)")
	}
	c.dev.VSock = &libvirtxml.DomainVSock{
		Model: c.virtioModel,
		CID:   &libvirtxml.DomainVSockCID{Auto: "no", Address: strconv.FormatUint(uint64(cid), 10)},
	}
	return nil
}

func (c *converter) convertPanic() error {
	pds := c.spec.Devices.PanicDevices
	if len(pds) == 0 {
		return nil
	}
	c.dev.Panics = make([]libvirtxml.DomainPanic, 0, len(pds))
	for i, p := range pds {
		var model string
		if p.Model != nil {
			model = string(*p.Model)
		}
		switch virtv1.PanicDeviceModel(model) {
		case "", virtv1.Hyperv, virtv1.Isa, virtv1.Pvpanic:
		default:
			return convErr(ErrInvalidField, indexed(pathDevices+".panicDevices", i)+".model", "unknown model "+strconv.Quote(model)+" (want hyperv, isa or pvpanic)")
		}
		c.dev.Panics = append(c.dev.Panics, libvirtxml.DomainPanic{Model: model})
	}
	return nil
}

func (c *converter) convertSound() error {
	s := c.spec.Devices.Sound
	if s == nil {
		return nil
	}
	model := s.Model
	switch model {
	case "":
		model = "ich9"
	case "ich9", "ac97":
	default:
		return convErr(ErrInvalidField, pathDevices+".sound.model", "unknown model "+strconv.Quote(model)+" (want ich9 or ac97)")
	}
	c.dev.Sounds = []libvirtxml.DomainSound{{Model: model, Alias: alias(s.Name)}}
	return nil
}

// convertHostDevices passes through the PCI devices the device plugins
// assigned to the pod (Host.HostDevices). libvirt must not rebind their
// drivers (managed='no'): they are already bound to vfio-pci.
func (c *converter) convertHostDevices() error {
	d := &c.spec.Devices
	n := len(d.HostDevices) + len(d.GPUs)
	if n == 0 {
		return nil
	}
	c.dev.Hostdevs = make([]libvirtxml.DomainHostdev, 0, n)
	add := func(field, name, aliasPrefix string) error {
		addr, ok := c.host.HostDevices[name]
		if !ok {
			return convErr(ErrMissingHostFact, field, "no host device assigned to "+strconv.Quote(name))
		}
		pci, err := parsePCIAddress(addr)
		if err != nil {
			return convErr(ErrMissingHostFact, field, "host device "+strconv.Quote(name)+": "+err.Error())
		}
		c.dev.Hostdevs = append(c.dev.Hostdevs, libvirtxml.DomainHostdev{
			Managed:   "no",
			SubsysPCI: &libvirtxml.DomainHostdevSubsysPCI{Source: &libvirtxml.DomainHostdevSubsysPCISource{Address: pci}},
			Alias:     alias(aliasPrefix + name),
		})
		return nil
	}
	for i, hd := range d.HostDevices {
		if err := add(indexed(pathDevices+".hostDevices", i), hd.Name, "hostdevice-"); err != nil {
			return err
		}
	}
	for i, g := range d.GPUs {
		if err := add(indexed(pathDevices+".gpus", i), g.Name, "gpu-"); err != nil {
			return err
		}
	}
	return nil
}
