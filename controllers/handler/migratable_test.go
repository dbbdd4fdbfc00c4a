package handler

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

// A block migration copies the node's disk images, not those on storage both
// nodes reach nor those the target makes again.
func TestLocalDisks(t *testing.T) {
	shared, local := true, false
	vol := func(name string, src virtv1.VolumeSource) virtv1.Volume {
		return virtv1.Volume{Name: name, VolumeSource: src}
	}
	vmi := &virtv1.VirtualMachineInstance{Spec: virtv1.VirtualMachineInstanceSpec{Volumes: []virtv1.Volume{
		vol("root", virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "x"}}),
		vol("ci", virtv1.VolumeSource{CloudInitNoCloud: &virtv1.CloudInitNoCloudSource{UserData: "#!/bin/sh"}}),
		vol("data", virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}),
		vol("dv", virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: "dv"}}),
		vol("nfs", virtv1.VolumeSource{HostDisk: &virtv1.HostDisk{Path: "/nfs/a.img", Shared: &shared}}),
		vol("host", virtv1.VolumeSource{HostDisk: &virtv1.HostDisk{Path: "/var/a.img", Shared: &local}}),
		vol("scratch", virtv1.VolumeSource{EmptyDisk: &virtv1.EmptyDiskSource{}}),
		vol("nodisk", virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "y"}}),
	}}}
	targets := map[string]string{"root": "vda", "ci": "vdb", "data": "vdc", "dv": "vdd", "nfs": "vde", "host": "vdf", "scratch": "vdg"}
	if d := cmp.Diff([]string{"vda", "vdg"}, localDisks(vmi, targets)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
