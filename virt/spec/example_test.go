package spec_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/spec"
)

// A VMI as a user writes it: a container disk and guest memory. DefaultVMI
// fills in what KubeVirt would; ValidateVMI then finds nothing to refuse.
func ExampleDefaultVMI() {
	guest := resource.MustParse("1Gi")
	vmi := &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default"},
		Spec: virtv1.VirtualMachineInstanceSpec{
			Domain: virtv1.DomainSpec{Memory: &virtv1.Memory{Guest: &guest}},
			Volumes: []virtv1.Volume{{
				Name: "root",
				VolumeSource: virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{
					Image: "quay.io/containerdisks/fedora:40",
				}},
			}},
		},
	}

	spec.DefaultVMI(vmi)
	if errs := spec.ValidateVMI(vmi); len(errs) > 0 {
		fmt.Println(errs.ToAggregate())
		return
	}

	d := vmi.Spec.Domain
	fmt.Println("machine:", d.Machine.Type)
	fmt.Println("cpu:", d.CPU.Sockets, d.CPU.Cores, d.CPU.Threads, d.CPU.Model)
	fmt.Println("memory request:", d.Resources.Requests.Memory())
	fmt.Println("disk:", d.Devices.Disks[0].Name, d.Devices.Disks[0].Disk.Bus)
	fmt.Println("nic:", d.Devices.Interfaces[0].Name, d.Devices.Interfaces[0].Model, vmi.Spec.Networks[0].Pod != nil)
	fmt.Println("acpi:", *d.Features.ACPI.Enabled)
	fmt.Println("uuid:", d.Firmware.UUID)
	// Output:
	// machine: q35
	// cpu: 1 1 1 host-model
	// memory request: 1Gi
	// disk: root virtio
	// nic: default virtio true
	// acpi: true
	// uuid: c8f23ed9-4fb7-5c77-84f2-a85f426b3f44
}

// ValidateVMI names each bad field and says why; features virtkit does not
// implement yet are reported as such.
func ExampleValidateVMI() {
	vmi := &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "default"},
		Spec: virtv1.VirtualMachineInstanceSpec{
			Domain: virtv1.DomainSpec{
				Devices: virtv1.Devices{
					Disks: []virtv1.Disk{{
						Name:       "root",
						DiskDevice: virtv1.DiskDevice{CDRom: &virtv1.CDRomTarget{Bus: virtv1.DiskBusVirtio}},
					}},
					GPUs: []virtv1.GPU{{Name: "gpu0", DeviceName: "nvidia.com/TU104GL"}},
				},
			},
			Volumes: []virtv1.Volume{{
				Name:         "root",
				VolumeSource: virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "example/iso"}},
			}},
		},
	}
	for _, err := range spec.ValidateVMI(vmi) {
		fmt.Printf("%s (unsupported=%v)\n", err, spec.IsUnsupported(err))
	}
	// Output:
	// spec.domain.devices.gpus: Forbidden: not supported by virtkit yet: GPU and vGPU assignment (device plugins, DRA) is not implemented (unsupported=true)
	// spec.domain.memory.guest: Required value: no memory requested: set spec.domain.memory.guest or spec.domain.resources.requests.memory (unsupported=false)
	// spec.domain.devices.disks[0].cdrom.bus: Invalid value: "virtio": virtio is not a valid bus for a cdrom; use sata or scsi (unsupported=false)
}
