// Package benchkit holds what the benchmarks under hack/bench share: the
// test guest as a VMI and as a plain libvirt domain booted the same way,
// and a timestamped progress logger.
package benchkit

import (
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/internal/testguest"
)

// GuestVMI is the test guest as a minimal VMI: a containerDisk image,
// memMiB of memory, masquerade on the pod network, and no grace period (a
// guest deleted while it boots ignores the power button, and a teardown
// would wait for the grace period). bench labels it.
func GuestVMI(namespace, name, image string, memMiB uint, bench string) *virtv1.VirtualMachineInstance {
	noGrace := int64(0)
	return &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"bench": bench}},
		Spec: virtv1.VirtualMachineInstanceSpec{
			TerminationGracePeriodSeconds: &noGrace,
			Domain: virtv1.DomainSpec{
				Resources: virtv1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceMemory: *resource.NewQuantity(int64(memMiB)<<20, resource.BinarySI)}},
				Devices: virtv1.Devices{
					Disks:      []virtv1.Disk{{Name: "containerdisk", DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusVirtio}}}},
					Interfaces: []virtv1.Interface{{Name: "default", InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Masquerade: &virtv1.InterfaceMasquerade{}}}},
				},
			},
			Networks: []virtv1.Network{{Name: "default", NetworkSource: virtv1.NetworkSource{Pod: &virtv1.PodNetwork{}}}},
			Volumes: []virtv1.Volume{{Name: "containerdisk", VolumeSource: virtv1.VolumeSource{
				ContainerDisk: &virtv1.ContainerDiskSource{Image: image}}}},
		},
	}
}

// DiskBooted is the test guest booting from a qcow2 disk, as a
// containerDisk VMI boots, instead of from its kernel: the plain libvirt
// floor next to GuestVMI.
func DiskBooted(name string, guest testguest.Artifacts, memMiB uint, disk, console string) *libvirtxml.Domain {
	doc := testguest.Domain(name, guest, memMiB, console)
	doc.OS.Kernel, doc.OS.Initrd, doc.OS.Cmdline = "", "", ""
	doc.Devices.Disks = []libvirtxml.DomainDisk{{
		Device: "disk",
		Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "qcow2"},
		Source: &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: disk}},
		Target: &libvirtxml.DomainDiskTarget{Dev: "vda", Bus: "virtio"},
		Boot:   &libvirtxml.DomainDeviceBoot{Order: 1},
	}}
	return doc
}

// ProgressLogger writes virt-local's progress, and when verbose its
// components' logs and start-up steps, to stderr with timestamps.
func ProgressLogger(verbose bool) logr.Logger {
	v := 0
	if verbose {
		v = 1
	}
	return funcr.New(func(prefix, args string) {
		fmt.Fprintln(os.Stderr, time.Now().Format("15:04:05.000"), prefix, args)
	}, funcr.Options{Verbosity: v})
}
