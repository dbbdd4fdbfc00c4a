package backendstorage

import (
	virtv1 "kubevirt.io/api/core/v1"
)

// PersistentEFI says whether spec keeps its EFI variables
// (firmware.bootloader.efi.persistent).
func PersistentEFI(spec *virtv1.VirtualMachineInstanceSpec) bool {
	fw := spec.Domain.Firmware
	return fw != nil && fw.Bootloader != nil && fw.Bootloader.EFI != nil &&
		fw.Bootloader.EFI.Persistent != nil && *fw.Bootloader.EFI.Persistent
}

// PersistentTPM says whether spec keeps its vTPM's state
// (devices.tpm.persistent, on an enabled TPM).
func PersistentTPM(spec *virtv1.VirtualMachineInstanceSpec) bool {
	t := spec.Domain.Devices.TPM
	return t != nil && (t.Enabled == nil || *t.Enabled) && t.Persistent != nil && *t.Persistent
}

// Needed says whether a VMI of spec needs a backend-storage claim.
func Needed(spec *virtv1.VirtualMachineInstanceSpec) bool {
	return PersistentEFI(spec) || PersistentTPM(spec)
}
