package domain

import (
	"strconv"
	"syscall"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	virtv1 "kubevirt.io/api/core/v1"
)

// largeVMI has 16 disks on three buses, 8 NICs, 8 dedicated vCPUs over two
// host NUMA cells mirrored into the guest, and 2Mi hugepages.
func largeVMI() (*virtv1.VirtualMachineInstance, Host) {
	vmi := baseVMI()
	d := &vmi.Spec.Domain
	d.Resources = virtv1.ResourceRequirements{
		Requests: k8sv1.ResourceList{k8sv1.ResourceMemory: resource.MustParse("16Gi"), k8sv1.ResourceCPU: resource.MustParse("8")},
		Limits:   k8sv1.ResourceList{k8sv1.ResourceMemory: resource.MustParse("16Gi"), k8sv1.ResourceCPU: resource.MustParse("8")},
	}
	d.CPU = &virtv1.CPU{Sockets: 2, Cores: 4, Threads: 1, DedicatedCPUPlacement: true, IsolateEmulatorThread: true,
		NUMA: &virtv1.NUMA{GuestMappingPassthrough: &virtv1.NUMAGuestMappingPassthrough{}}}
	d.Memory = &virtv1.Memory{Hugepages: &virtv1.Hugepages{PageSize: "2Mi"}}
	auto := virtv1.IOThreadsPolicyAuto
	d.IOThreadsPolicy = &auto
	buses := []virtv1.DiskBus{virtv1.DiskBusVirtio, virtv1.DiskBusVirtio, virtv1.DiskBusSCSI, virtv1.DiskBusSATA}
	for i := 2; i < 16; i++ {
		name := "data" + strconv.Itoa(i)
		d.Devices.Disks = append(d.Devices.Disks, virtv1.Disk{Name: name, Serial: "S" + strconv.Itoa(i),
			DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: buses[i%len(buses)]}}})
		vmi.Spec.Volumes = append(vmi.Spec.Volumes, virtv1.Volume{Name: name, VolumeSource: virtv1.VolumeSource{
			PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{}}})
	}
	for i := 1; i < 8; i++ {
		name := "net" + strconv.Itoa(i)
		d.Devices.Interfaces = append(d.Devices.Interfaces, virtv1.Interface{Name: name,
			InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Bridge: &virtv1.InterfaceBridge{}}})
		vmi.Spec.Networks = append(vmi.Spec.Networks, virtv1.Network{Name: name,
			NetworkSource: virtv1.NetworkSource{Multus: &virtv1.MultusNetwork{NetworkName: name}}})
	}
	host := testHost(vmi)
	host.Emulation = false
	host.HugepageSizes = []string{"2Mi", "1Gi"}
	host.CPU.DedicatedCPUs = []int{2, 3, 4, 5, 18, 19, 20, 21, 6}
	host.CPU.NUMACells = []NUMACell{
		{ID: 0, CPUs: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}},
		{ID: 1, CPUs: []int{16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31}},
	}
	return vmi, host
}

// BenchmarkConvert measures Convert plus Marshal, what the handler pays to
// define a domain. KubeVirt's converter takes about 41µs and 183 allocations
// for the typical case on the reference machine.
func BenchmarkConvert(b *testing.B) {
	typical := baseVMI()
	large, largeHost := largeVMI()
	for _, bc := range []struct {
		name string
		vmi  *virtv1.VirtualMachineInstance
		host Host
	}{
		{"typical", typical, testHost(typical)},
		{"large", large, largeHost},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				dom, err := Convert(bc.vmi, bc.host)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := dom.Marshal(); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, start)
		})
	}
}

// BenchmarkConvertOnly measures conversion without marshalling, to show
// how much of the total is ours.
func BenchmarkConvertOnly(b *testing.B) {
	typical := baseVMI()
	host := testHost(typical)
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		if _, err := Convert(typical, host); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
}

func TestLargeConverts(t *testing.T) {
	vmi, host := largeVMI()
	dom, err := Convert(vmi, host)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(dom.Devices.Disks); n != 16 {
		t.Errorf("disks: %d", n)
	}
	if n := len(dom.Devices.Interfaces); n != 8 {
		t.Errorf("interfaces: %d", n)
	}
	if dom.CPU.Numa == nil || len(dom.CPU.Numa.Cell) != 2 {
		t.Errorf("numa: %+v", dom.CPU.Numa)
	}
}

func BenchmarkMarshalOnly(b *testing.B) {
	typical := baseVMI()
	dom, err := Convert(typical, testHost(typical))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		if _, err := dom.Marshal(); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
}

// cpuTime is the CPU time the process has used, user and system, GC
// workers included. The shared 2-core machines this runs on are often busy,
// which inflates ns/op (wall clock); CPU time per op is the steadier figure.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, start time.Duration) {
	if used := cpuTime() - start; used > 0 && b.N > 0 {
		b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}
