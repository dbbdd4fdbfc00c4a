package domain_test

import (
	"fmt"
	"strings"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/network"
	"github.com/virtkit/virtkit/virt/storage"
)

// Convert a VMI built in Go, with no cluster: one container disk and one
// masquerade NIC, on an emulated host. The storage and network plans would
// come from virt/storage and virt/network; here they are written by hand.
func ExampleConvert() {
	vmi := &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default", UID: "1234"},
		Spec: virtv1.VirtualMachineInstanceSpec{
			Domain: virtv1.DomainSpec{
				Resources: virtv1.ResourceRequirements{Requests: k8sv1.ResourceList{k8sv1.ResourceMemory: resource.MustParse("512Mi")}},
				CPU:       &virtv1.CPU{Cores: 2},
				Devices: virtv1.Devices{
					Disks:      []virtv1.Disk{{Name: "root", DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusVirtio}}}},
					Interfaces: []virtv1.Interface{{Name: "default", InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Masquerade: &virtv1.InterfaceMasquerade{}}}},
				},
			},
			Volumes: []virtv1.Volume{{Name: "root", VolumeSource: virtv1.VolumeSource{
				ContainerDisk: &virtv1.ContainerDiskSource{Image: "quay.io/containerdisks/fedora:41"}}}},
			Networks: []virtv1.Network{{Name: "default", NetworkSource: virtv1.NetworkSource{Pod: &virtv1.PodNetwork{}}}},
		},
	}
	host := domain.Host{
		Emulation: true,
		Storage: storage.Plan{"root": {Volume: "root", Source: storage.SourceFile,
			Path: "/var/run/virtkit/disks/root.qcow2", Format: storage.FormatQCOW2}},
		Network: network.Plan{"default": {Interface: "default", Binding: network.BindingMasquerade,
			TapName: "tap0", MAC: "02:00:00:00:00:01"}},
	}

	dom, err := domain.Convert(vmi, host)
	if err != nil {
		fmt.Println(err)
		return
	}
	xml, err := dom.Marshal()
	if err != nil {
		fmt.Println(err)
		return
	}
	// Print the domain's head and its disk.
	lines := strings.Split(xml, "\n")
	fmt.Println(strings.Join(lines[:5], "\n"))
	for i, l := range lines {
		if strings.Contains(l, "<disk ") {
			fmt.Println(strings.Join(lines[i:i+6], "\n"))
		}
	}
	// Output:
	// <domain type="qemu">
	//   <name>default_demo</name>
	//   <memory unit="b">536870912</memory>
	//   <vcpu placement="static">2</vcpu>
	//   <sysinfo type="smbios">
	//     <disk type="file" device="disk" model="virtio-non-transitional">
	//       <driver name="qemu" type="qcow2" error_policy="stop" discard="unmap"></driver>
	//       <source file="/var/run/virtkit/disks/root.qcow2"></source>
	//       <target dev="vda" bus="virtio"></target>
	//       <alias name="ua-root"></alias>
	//     </disk>
}

// Convert reports what it cannot convert with the field's path.
func ExampleConvert_error() {
	vmi := &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default"},
		Spec: virtv1.VirtualMachineInstanceSpec{
			Domain: virtv1.DomainSpec{
				Resources: virtv1.ResourceRequirements{Requests: k8sv1.ResourceList{k8sv1.ResourceMemory: resource.MustParse("512Mi")}},
				Devices:   virtv1.Devices{Disks: []virtv1.Disk{{Name: "root"}}},
			},
			Volumes: []virtv1.Volume{{Name: "root", VolumeSource: virtv1.VolumeSource{EmptyDisk: &virtv1.EmptyDiskSource{}}}},
		},
	}
	_, err := domain.Convert(vmi, domain.Host{}) // no storage plan
	fmt.Println(err)
	// Output:
	// spec.domain.devices.disks[0]: no storage plan for volume "root"
}

// Status maps a domain's libvirt state to the VMI's phase and conditions.
func ExampleStatus() {
	vmi := &virtv1.VirtualMachineInstance{Status: virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Running}}
	st := domain.Status(vmi, &domain.DomainState{State: domain.StatePaused, Reason: domain.ReasonPausedUser})
	fmt.Println(st.Phase, st.Reason)
	for _, c := range st.Conditions {
		fmt.Println(c.Type, c.Status, c.Reason)
	}
	// Output:
	// Running User
	// Ready False Paused
	// Paused True PausedByUser
}
