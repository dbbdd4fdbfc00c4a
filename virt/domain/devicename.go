package domain

import virtv1 "kubevirt.io/api/core/v1"

// DevicePrefix is the prefix of a disk's guest device name on bus, as
// KubeVirt names them: "vd" for virtio, "sd" for every other bus (sata,
// scsi, usb). Disks whose buses share a prefix share one sequence of names.
func DevicePrefix(bus virtv1.DiskBus) string {
	if bus == virtv1.DiskBusVirtio {
		return "vd"
	}
	return "sd"
}

// Guest device names of the first 26 disks of each prefix, sliced rather
// than built, so that converting a VMI allocates nothing for them.
const (
	vdNames = "vdavdbvdcvddvdevdfvdgvdhvdivdjvdkvdlvdmvdnvdovdpvdqvdrvdsvdtvduvdvvdwvdxvdyvdz"
	sdNames = "sdasdbsdcsddsdesdfsdgsdhsdisdjsdksdlsdmsdnsdosdpsdqsdrsdssdtsdusdvsdwsdxsdysdz"
)

// DeviceName is the guest device name of the n-th disk (from 0) of a prefix
// (see DevicePrefix): vda..vdz, vdaa, vdab, ... It is the one rule for it:
// Convert names the disks a domain boots with by it, and
// virt/storage/hotplug the disks it attaches later, so both agree.
func DeviceName(prefix string, n int) string {
	if n >= 0 && n < 26 {
		switch prefix {
		case "vd":
			return vdNames[3*n : 3*n+3]
		case "sd":
			return sdNames[3*n : 3*n+3]
		}
	}
	var buf [8]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('a' + n%26)
		n = n/26 - 1
		if n < 0 {
			break
		}
	}
	return prefix + string(buf[i:])
}
