package spec

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	virtv1 "kubevirt.io/api/core/v1"
)

// UnsupportedPrefix starts the detail of every error that rejects a KubeVirt
// feature virtkit does not implement yet. Such errors are field.Forbidden;
// IsUnsupported tells them from other validation errors.
const UnsupportedPrefix = "not supported by virtkit yet: "

// IsUnsupported reports whether err rejects a feature virtkit does not
// implement yet (rather than an invalid spec).
func IsUnsupported(err *field.Error) bool {
	return err != nil && err.Type == field.ErrorTypeForbidden && strings.HasPrefix(err.Detail, UnsupportedPrefix)
}

// UnsupportedFeature is one row of the table of KubeVirt API fields virtkit
// accepts in its schema but does not implement. A spec that sets one is
// rejected naming the field, never run with the field silently dropped.
type UnsupportedFeature struct {
	// Path is relative to a VMI spec ("domain.devices.gpus"); [*] stands for
	// any list index.
	Path string
	// Reason says what is missing.
	Reason string
}

// unsupportedRow pairs a table row with the function that finds where a spec
// sets it: the list indices for a Path with [*], or any one-element slice
// for a Path without. Paths are built from the row's Path only when a field
// is found, so a clean spec costs no allocation per row.
type unsupportedRow struct {
	UnsupportedFeature
	where func(s *virtv1.VirtualMachineInstanceSpec) []int
}

// UnsupportedFeatures returns the table, for documentation and for
// integrators that want to hide these fields from users.
func UnsupportedFeatures() []UnsupportedFeature {
	rows := unsupportedRows()
	out := make([]UnsupportedFeature, len(rows))
	for i := range rows {
		out[i] = rows[i].UnsupportedFeature
	}
	return out
}

// unsupportedRows is the single table. It is built by a function, not held
// in a package variable, so no caller can change it for another.
func unsupportedRows() []unsupportedRow {
	type spec = virtv1.VirtualMachineInstanceSpec
	return []unsupportedRow{
		{UnsupportedFeature{"domain.devices.gpus", "GPU and vGPU assignment (device plugins, DRA) is not implemented"},
			func(s *spec) []int { return flag(len(s.Domain.Devices.GPUs) > 0) }},
		{UnsupportedFeature{"domain.devices.hostDevices[*].claimName", "host devices from dynamic resource allocation claims are not implemented; use deviceName"},
			func(s *spec) []int {
				return indices(len(s.Domain.Devices.HostDevices), func(i int) bool { return s.Domain.Devices.HostDevices[i].ClaimRequest != nil })
			}},
		{UnsupportedFeature{"resourceClaims", "dynamic resource allocation is not implemented"},
			func(s *spec) []int { return flag(len(s.ResourceClaims) > 0) }},
		{UnsupportedFeature{"networks[*].multus.default", "a Multus network as the pod's default network is not implemented; secondary Multus networks are"},
			func(s *spec) []int {
				return indices(len(s.Networks), func(i int) bool { return s.Networks[i].Multus != nil && s.Networks[i].Multus.Default })
			}},
		{UnsupportedFeature{"domain.devices.interfaces[*].sriov", "SR-IOV binding is not implemented"},
			func(s *spec) []int { return ifaces(s, func(i *virtv1.Interface) bool { return i.SRIOV != nil }) }},
		{UnsupportedFeature{"domain.devices.interfaces[*].macvtap", "macvtap binding (deprecated in KubeVirt) is not implemented"},
			func(s *spec) []int {
				return ifaces(s, func(i *virtv1.Interface) bool { return i.DeprecatedMacvtap != nil })
			}},
		{UnsupportedFeature{"domain.devices.interfaces[*].slirp", "slirp binding (removed from KubeVirt) is not implemented"},
			func(s *spec) []int {
				return ifaces(s, func(i *virtv1.Interface) bool { return i.DeprecatedSlirp != nil })
			}},
		{UnsupportedFeature{"domain.devices.interfaces[*].passt", "passt binding is not implemented"},
			func(s *spec) []int {
				return ifaces(s, func(i *virtv1.Interface) bool { return i.DeprecatedPasst != nil })
			}},
		{UnsupportedFeature{"domain.devices.interfaces[*].passtBinding", "passt binding is not implemented"},
			func(s *spec) []int { return ifaces(s, func(i *virtv1.Interface) bool { return i.PasstBinding != nil }) }},
		{UnsupportedFeature{"domain.devices.interfaces[*].binding", "network binding plugins (including vhost-user) are not implemented"},
			func(s *spec) []int { return ifaces(s, func(i *virtv1.Interface) bool { return i.Binding != nil }) }},
		{UnsupportedFeature{"domain.launchSecurity", "confidential computing (SEV, SEV-SNP, TDX) is not implemented"},
			func(s *spec) []int { return flag(s.Domain.LaunchSecurity != nil) }},
		{UnsupportedFeature{"domain.cpu.realtime", "realtime vCPU tuning is not implemented"},
			func(s *spec) []int { return flag(s.Domain.CPU != nil && s.Domain.CPU.Realtime != nil) }},
		{UnsupportedFeature{"domain.firmware.acpi", "custom ACPI tables (SLIC, MSDM) are not implemented"},
			func(s *spec) []int { return flag(s.Domain.Firmware != nil && s.Domain.Firmware.ACPI != nil) }},
		{UnsupportedFeature{"domain.devices.sound", "sound devices are not implemented"},
			func(s *spec) []int { return flag(s.Domain.Devices.Sound != nil) }},
		{UnsupportedFeature{"domain.devices.clientPassthrough", "USB redirection from a client is not implemented"},
			func(s *spec) []int { return flag(s.Domain.Devices.ClientPassthrough != nil) }},
		{UnsupportedFeature{"domain.devices.downwardMetrics", "the downward metrics device is not implemented"},
			func(s *spec) []int { return flag(s.Domain.Devices.DownwardMetrics != nil) }},
		{UnsupportedFeature{"domain.devices.disks[*].changedBlockTracking", "changed block tracking (incremental backup) is not implemented"},
			func(s *spec) []int {
				return disks(s, func(d *virtv1.Disk) bool { return isTrue(d.ChangedBlockTracking) })
			}},
		{UnsupportedFeature{"domain.devices.disks[*].lun.reservation", "SCSI persistent reservation is not implemented"},
			func(s *spec) []int {
				return disks(s, func(d *virtv1.Disk) bool { return d.LUN != nil && d.LUN.Reservation })
			}},
		{UnsupportedFeature{"volumes[*].downwardMetrics", "the downward metrics disk is not implemented"},
			func(s *spec) []int {
				return volumes(s, func(v *virtv1.Volume) bool { return v.DownwardMetrics != nil })
			}},
		{UnsupportedFeature{"volumes[*].memoryDump", "memory dumps are not implemented"},
			func(s *spec) []int { return volumes(s, func(v *virtv1.Volume) bool { return v.MemoryDump != nil }) }},
		{UnsupportedFeature{"volumes[*].containerPath", "container path volumes are not implemented"},
			func(s *spec) []int { return volumes(s, func(v *virtv1.Volume) bool { return v.ContainerPath != nil }) }},
		{UnsupportedFeature{"utilityVolumes", "utility volumes (memory dump, backup) are not implemented"},
			func(s *spec) []int { return flag(len(s.UtilityVolumes) > 0) }},
	}
}

// validateUnsupported rejects every field of the table that spec sets.
func validateUnsupported(p *field.Path, s *virtv1.VirtualMachineInstanceSpec) field.ErrorList {
	var errs field.ErrorList
	for _, row := range unsupportedRows() {
		for _, i := range row.where(s) {
			errs = append(errs, field.Forbidden(pathOf(p, row.Path, i), UnsupportedPrefix+row.Reason))
		}
	}
	return errs
}

// pathOf turns a table path ("domain.devices.disks[*].lun.reservation")
// into a field path under base, with [*] replaced by index i.
func pathOf(base *field.Path, pattern string, i int) *field.Path {
	p := base
	for _, seg := range strings.Split(pattern, ".") {
		if name, ok := strings.CutSuffix(seg, "[*]"); ok {
			p = p.Child(name).Index(i)
		} else {
			p = p.Child(seg)
		}
	}
	return p
}

// flag is where for a field without list index: one hit when set.
func flag(set bool) []int {
	if set {
		return []int{0}
	}
	return nil
}

// indices returns the i in [0,n) for which set(i) holds.
func indices(n int, set func(int) bool) []int {
	var out []int
	for i := 0; i < n; i++ {
		if set(i) {
			out = append(out, i)
		}
	}
	return out
}

func ifaces(s *virtv1.VirtualMachineInstanceSpec, set func(*virtv1.Interface) bool) []int {
	l := s.Domain.Devices.Interfaces
	return indices(len(l), func(i int) bool { return set(&l[i]) })
}

func disks(s *virtv1.VirtualMachineInstanceSpec, set func(*virtv1.Disk) bool) []int {
	l := s.Domain.Devices.Disks
	return indices(len(l), func(i int) bool { return set(&l[i]) })
}

func volumes(s *virtv1.VirtualMachineInstanceSpec, set func(*virtv1.Volume) bool) []int {
	l := s.Volumes
	return indices(len(l), func(i int) bool { return set(&l[i]) })
}

func isTrue(b *bool) bool { return b != nil && *b }
