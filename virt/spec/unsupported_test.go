package spec

import (
	"strings"
	"testing"

	k8sv1 "k8s.io/api/core/v1"

	virtv1 "kubevirt.io/api/core/v1"
)

// TestUnsupportedTable sets each field of the unsupported table on a valid
// VMI and checks it is rejected as unsupported at exactly that path. A row
// added to the table without a case here fails the test.
func TestUnsupportedTable(t *testing.T) {
	pvc := &virtv1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}
	addVolume := func(v *virtv1.VirtualMachineInstance, src virtv1.VolumeSource) {
		v.Spec.Volumes = append(v.Spec.Volumes, virtv1.Volume{Name: "extra", VolumeSource: src})
		v.Spec.Domain.Devices.Disks = append(v.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "extra", DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{}}})
	}
	cases := map[string]struct {
		mutate func(*virtv1.VirtualMachineInstance)
		at     string
	}{
		"domain.devices.gpus": {func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.GPUs = []virtv1.GPU{{Name: "g", DeviceName: "d"}}
		}, "spec.domain.devices.gpus"},
		"domain.devices.hostDevices[*].claimName": {func(v *virtv1.VirtualMachineInstance) {
			n := "claim"
			v.Spec.Domain.Devices.HostDevices = []virtv1.HostDevice{{Name: "h", ClaimRequest: &virtv1.ClaimRequest{ClaimName: &n}}}
		}, "spec.domain.devices.hostDevices[0].claimName"},
		"resourceClaims": {func(v *virtv1.VirtualMachineInstance) {
			v.Spec.ResourceClaims = []k8sv1.PodResourceClaim{{Name: "c"}}
		}, "spec.resourceClaims"},
		"networks[*].multus.default": {func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Networks[0].NetworkSource = virtv1.NetworkSource{Multus: &virtv1.MultusNetwork{NetworkName: "n", Default: true}}
			iface0(v).InterfaceBindingMethod = virtv1.InterfaceBindingMethod{Bridge: &virtv1.InterfaceBridge{}}
		}, "spec.networks[0].multus.default"},
		"domain.devices.interfaces[*].sriov": {func(v *virtv1.VirtualMachineInstance) {
			iface0(v).InterfaceBindingMethod = virtv1.InterfaceBindingMethod{SRIOV: &virtv1.InterfaceSRIOV{}}
		}, "spec.domain.devices.interfaces[0].sriov"},
		"domain.devices.interfaces[*].macvtap": {func(v *virtv1.VirtualMachineInstance) {
			iface0(v).InterfaceBindingMethod = virtv1.InterfaceBindingMethod{DeprecatedMacvtap: &virtv1.DeprecatedInterfaceMacvtap{}}
		}, "spec.domain.devices.interfaces[0].macvtap"},
		"domain.devices.interfaces[*].slirp": {func(v *virtv1.VirtualMachineInstance) {
			iface0(v).InterfaceBindingMethod = virtv1.InterfaceBindingMethod{DeprecatedSlirp: &virtv1.DeprecatedInterfaceSlirp{}}
		}, "spec.domain.devices.interfaces[0].slirp"},
		"domain.devices.interfaces[*].passt": {func(v *virtv1.VirtualMachineInstance) {
			iface0(v).InterfaceBindingMethod = virtv1.InterfaceBindingMethod{DeprecatedPasst: &virtv1.DeprecatedInterfacePasst{}}
		}, "spec.domain.devices.interfaces[0].passt"},
		"domain.devices.interfaces[*].passtBinding": {func(v *virtv1.VirtualMachineInstance) {
			iface0(v).InterfaceBindingMethod = virtv1.InterfaceBindingMethod{PasstBinding: &virtv1.InterfacePasstBinding{}}
		}, "spec.domain.devices.interfaces[0].passtBinding"},
		"domain.devices.interfaces[*].binding": {func(v *virtv1.VirtualMachineInstance) {
			iface0(v).InterfaceBindingMethod = virtv1.InterfaceBindingMethod{}
			iface0(v).Binding = &virtv1.PluginBinding{Name: "vhostuser"}
		}, "spec.domain.devices.interfaces[0].binding"},
		"domain.launchSecurity": {func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.LaunchSecurity = &virtv1.LaunchSecurity{SEV: &virtv1.SEV{}}
		}, "spec.domain.launchSecurity"},
		"domain.cpu.realtime": {func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.CPU.Realtime = &virtv1.Realtime{}
		}, "spec.domain.cpu.realtime"},
		"domain.firmware.acpi": {func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Firmware.ACPI = &virtv1.ACPI{SlicNameRef: "s"}
		}, "spec.domain.firmware.acpi"},
		"domain.devices.sound": {func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Sound = &virtv1.SoundDevice{Name: "s"}
		}, "spec.domain.devices.sound"},
		"domain.devices.clientPassthrough": {func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.ClientPassthrough = &virtv1.ClientPassthroughDevices{}
		}, "spec.domain.devices.clientPassthrough"},
		"domain.devices.downwardMetrics": {func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.DownwardMetrics = &virtv1.DownwardMetrics{}
		}, "spec.domain.devices.downwardMetrics"},
		"domain.devices.disks[*].changedBlockTracking": {func(v *virtv1.VirtualMachineInstance) {
			disk0(v).ChangedBlockTracking = boolPtr(true)
		}, "spec.domain.devices.disks[0].changedBlockTracking"},
		"domain.devices.disks[*].lun.reservation": {func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Volumes[0].VolumeSource = virtv1.VolumeSource{PersistentVolumeClaim: pvc}
			disk0(v).DiskDevice = virtv1.DiskDevice{LUN: &virtv1.LunTarget{Reservation: true}}
		}, "spec.domain.devices.disks[0].lun.reservation"},
		"volumes[*].downwardMetrics": {func(v *virtv1.VirtualMachineInstance) {
			addVolume(v, virtv1.VolumeSource{DownwardMetrics: &virtv1.DownwardMetricsVolumeSource{}})
		}, "spec.volumes[2].downwardMetrics"},
		"volumes[*].memoryDump": {func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Volumes = append(v.Spec.Volumes, virtv1.Volume{Name: "dump", VolumeSource: virtv1.VolumeSource{
				MemoryDump: &virtv1.MemoryDumpVolumeSource{PersistentVolumeClaimVolumeSource: *pvc}}})
		}, "spec.volumes[2].memoryDump"},
		"volumes[*].containerPath": {func(v *virtv1.VirtualMachineInstance) {
			addVolume(v, virtv1.VolumeSource{ContainerPath: &virtv1.ContainerPathVolumeSource{Path: "/x"}})
		}, "spec.volumes[2].containerPath"},
		"utilityVolumes": {func(v *virtv1.VirtualMachineInstance) {
			v.Spec.UtilityVolumes = []virtv1.UtilityVolume{{Name: "u"}}
		}, "spec.utilityVolumes"},
	}
	table := UnsupportedFeatures()
	for _, row := range table {
		t.Run(row.Path, func(t *testing.T) {
			c, ok := cases[row.Path]
			if !ok {
				t.Fatalf("no test case for unsupported row %q", row.Path)
			}
			vmi := validVMI()
			c.mutate(vmi)
			var got []string
			for _, err := range ValidateVMI(vmi) {
				if IsUnsupported(err) {
					got = append(got, err.Field)
					if !strings.Contains(err.Detail, row.Reason) {
						t.Errorf("detail %q does not carry the reason %q", err.Detail, row.Reason)
					}
				}
			}
			if len(got) != 1 || got[0] != c.at {
				t.Errorf("unsupported errors at %v, want exactly [%s]", got, c.at)
			}
		})
	}
	if len(cases) != len(table) {
		t.Errorf("%d cases for %d table rows", len(cases), len(table))
	}
}
