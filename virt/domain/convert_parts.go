package domain

import "libvirt.org/go/libvirtxml"

// domainParts holds the elements every domain has exactly one of. libvirtxml
// links its elements by pointer, so building a document the plain way costs
// one allocation per element; these live inside the converter instead, which
// the returned Domain points into, so they cost nothing of their own. Lists
// (disks, NICs) get one backing array each for the same reason.
type domainParts struct {
	osType   libvirtxml.DomainOSType
	os       libvirtxml.DomainOS
	smbios   libvirtxml.DomainSMBios
	sysinfo  [1]libvirtxml.DomainSysInfo
	sysSMB   libvirtxml.DomainSysInfoSMBIOS
	system   libvirtxml.DomainSysInfoSystem
	entries  [7]libvirtxml.DomainSysInfoEntry
	memory   libvirtxml.DomainMemory
	vcpu     libvirtxml.DomainVCPU
	cpu      libvirtxml.DomainCPU
	topology libvirtxml.DomainCPUTopology
	features libvirtxml.DomainFeatureList
	clock    libvirtxml.DomainClock

	zero        uint // index 0 and port 0 of the controllers and the console
	controllers [3]libvirtxml.DomainController

	serial       [1]libvirtxml.DomainSerial
	serialSrc    libvirtxml.DomainChardevSource
	serialUnix   libvirtxml.DomainChardevSourceUNIX
	serialTarget libvirtxml.DomainSerialTarget
	serialLog    libvirtxml.DomainChardevLog
	console      [1]libvirtxml.DomainConsole
	consoleSrc   libvirtxml.DomainChardevSource
	consolePty   libvirtxml.DomainChardevSourcePty
	consoleTgt   libvirtxml.DomainConsoleTarget

	channel    [1]libvirtxml.DomainChannel
	chanSrc    libvirtxml.DomainChardevSource
	chanUnix   libvirtxml.DomainChardevSourceUNIX
	chanTarget libvirtxml.DomainChannelTarget
	chanVirtio libvirtxml.DomainChannelTargetVirtIO

	graphics  [1]libvirtxml.DomainGraphic
	vnc       libvirtxml.DomainGraphicVNC
	listener  [1]libvirtxml.DomainGraphicListener
	vncSocket libvirtxml.DomainGraphicListenerSocket
	video     [1]libvirtxml.DomainVideo

	balloon libvirtxml.DomainMemBalloon
	stats   libvirtxml.DomainMemBalloonStats
}

// diskParts are the elements of one <disk>.
type diskParts struct {
	driver libvirtxml.DomainDiskDriver
	source libvirtxml.DomainDiskSource
	file   libvirtxml.DomainDiskSourceFile
	block  libvirtxml.DomainDiskSourceBlock
	target libvirtxml.DomainDiskTarget
	alias  libvirtxml.DomainAlias
	boot   libvirtxml.DomainDeviceBoot
	thread uint
}

// nicParts are the elements of one <interface>.
type nicParts struct {
	source   libvirtxml.DomainInterfaceSource
	ethernet libvirtxml.DomainInterfaceSourceEthernet
	target   libvirtxml.DomainInterfaceTarget
	model    libvirtxml.DomainInterfaceModel
	mac      libvirtxml.DomainInterfaceMAC
	mtu      libvirtxml.DomainInterfaceMTU
	rom      libvirtxml.DomainROM
	alias    libvirtxml.DomainAlias
	boot     libvirtxml.DomainDeviceBoot
}
