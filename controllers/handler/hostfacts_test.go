package handler_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/virt/domain"
)

// The handler reads the launcher pod's cpuset from its libvirtd's
// /proc/PID/status (the kubelet's static CPU manager gives a pod with
// dedicated CPUs exclusive ones) and pins the guest's vCPUs to them.
func TestDedicatedCPUsComeFromThePodsCPUSet(t *testing.T) {
	n := newFakeNode(t)
	n.node["proc/4242/status"] = &fstest.MapFile{Data: []byte("Name:\tlibvirtd\nCpus_allowed_list:\t6-7\n")}
	n.node["sys/devices/system/node/node0/cpulist"] = &fstest.MapFile{Data: []byte("0-7\n")}
	vmi := scheduledVMI("vm1")
	vmi.Spec.Domain.CPU = &virtv1.CPU{Cores: 2, Sockets: 1, Threads: 1, DedicatedCPUPlacement: true}
	ctx := context.Background()
	assert.NilError(t, n.c.Create(ctx, vmi))
	assert.NilError(t, n.c.Status().Update(ctx, vmi))
	n.ready(vmi)
	n.reconcile("vm1")
	assert.Equal(t, n.vmi("vm1").Status.Phase, virtv1.Running)
	d, err := n.dom.XML(ctx, "default_vm1", domain.XMLOptions{})
	assert.NilError(t, err)
	assert.Assert(t, d.CPUTune != nil, "no cputune in %+v", d)
	var pins []libvirtxml.DomainCPUTuneVCPUPin
	pins = append(pins, d.CPUTune.VCPUPin...)
	want := []libvirtxml.DomainCPUTuneVCPUPin{{VCPU: 0, CPUSet: "6"}, {VCPU: 1, CPUSet: "7"}}
	if diff := cmp.Diff(want, pins); diff != "" {
		t.Errorf("vCPU pins (-want +got):\n%s", diff)
	}
}
