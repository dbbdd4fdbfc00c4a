package spec

import (
	"encoding/json"
	"regexp"
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	virtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
)

// fuzzSeeds are specs that reach many branches: the typical VMI, one with
// most devices, and a few edge shapes.
func fuzzSeeds() []string {
	typical, _ := json.Marshal(validVMI())
	return []string{
		string(typical),
		`{}`,
		`{"metadata":{"name":"a"},"spec":{"domain":{"devices":{}}}}`,
		`{"metadata":{"name":"a","namespace":"b"},"spec":{"architecture":"arm64","domain":{"cpu":{"dedicatedCpuPlacement":true,"isolateEmulatorThread":true,"numa":{"guestMappingPassthrough":{}}},"memory":{"hugepages":{"pageSize":"1Gi"},"maxGuest":"4Gi"},"resources":{"requests":{"cpu":"1500m","memory":"3Gi"},"limits":{"cpu":"2"}},"devices":{"disks":[{"name":"d","cdrom":{"bus":"virtio"},"bootOrder":0,"blockSize":{"custom":{"logical":3,"physical":1}}},{"name":"l","lun":{}}],"interfaces":[{"name":"n","masquerade":{},"bridge":{},"macAddress":"zz","ports":[{"port":-1,"protocol":"X"}]}],"watchdog":{"name":"w","diag288":{"action":"x"}},"inputs":[{"type":"x"}]},"features":{"hyperv":{"synictimer":{"direct":{}},"evmcs":{},"vapic":{"enabled":false},"spinlocks":{"spinlocks":1}}},"firmware":{"bootloader":{"efi":{},"bios":{}},"kernelBoot":{"kernelArgs":"x","container":{}}},"clock":{"utc":{},"timezone":"x","timer":{"hpet":{},"rtc":{"track":"x"}}}},"networks":[{"name":"n","multus":{"networkName":"x"}},{"name":"n","pod":{"vmNetworkCIDR":"x"}}],"volumes":[{"name":"d","containerDisk":{"image":"","path":"../x"}},{"name":"l","cloudInitNoCloud":{"userDataBase64":"%%"}},{"name":"x","memoryDump":{}},{"name":"y","hostDisk":{"type":"q"}}]}}`,
		`{"spec":{"domain":{"cpu":{"sockets":4294967295,"cores":4294967295,"threads":4294967295},"resources":{"limits":{"cpu":"1e18","memory":"-1"}}},"terminationGracePeriodSeconds":-5}}`,
	}
}

// FuzzDefaultValidate feeds arbitrary JSON, read as a VMI, through DefaultVMI
// and ValidateVMI (and the VM path with an instancetype and preference) and
// checks that nothing panics, that defaulting is idempotent, and that every
// error names a field under the object.
func FuzzDefaultValidate(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add([]byte(s))
	}
	it := &instancetypev1beta1.VirtualMachineInstancetypeSpec{CPU: instancetypev1beta1.CPUInstancetype{Guest: 3},
		Memory: instancetypev1beta1.MemoryInstancetype{Guest: *qty("1Gi"), OvercommitPercent: 50}}
	spread := instancetypev1beta1.Spread
	pref := &instancetypev1beta1.VirtualMachinePreferenceSpec{CPU: &instancetypev1beta1.CPUPreferences{PreferredCPUTopology: &spread},
		Devices: &instancetypev1beta1.DevicePreferences{PreferredDiskBus: "scsi"}}
	// apimachinery's resource.ParseQuantity takes time superlinear in a
	// negative exponent ("1e-9999999" takes seconds to decode). That cost is
	// in decoding, before this package runs, so such inputs are skipped.
	hugeExponent := regexp.MustCompile(`[eE]-?[0-9]{5,}`)
	f.Fuzz(func(t *testing.T, data []byte) {
		if hugeExponent.Match(data) {
			return
		}
		// A hang would stall the fuzzer silently; crash with the stacks instead
		// so the input is saved and the loop can be found.
		watchdog := time.AfterFunc(5*time.Second, func() {
			buf := make([]byte, 1<<20)
			panic("hung:\n" + string(buf[:runtime.Stack(buf, true)]))
		})
		defer watchdog.Stop()
		var vmi virtv1.VirtualMachineInstance
		if err := json.Unmarshal(data, &vmi); err != nil {
			return
		}
		start := time.Now()
		defer func() {
			if d := time.Since(start); d > time.Second {
				t.Errorf("defaulting and validation took %s", d)
			}
		}()
		vm := &virtv1.VirtualMachine{ObjectMeta: vmi.ObjectMeta, Spec: virtv1.VirtualMachineSpec{
			Template: &virtv1.VirtualMachineInstanceTemplateSpec{Spec: *vmi.Spec.DeepCopy()}}}

		_ = ValidateVMI(&vmi)
		DefaultVMI(&vmi)
		once := vmi.DeepCopy()
		DefaultVMI(&vmi)
		a, _ := json.Marshal(once)
		b, _ := json.Marshal(&vmi)
		if string(a) != string(b) {
			t.Fatalf("DefaultVMI is not idempotent:\n%s\n%s", a, b)
		}
		checkPaths(t, ValidateVMI(&vmi))

		DefaultVM(vm)
		checkPaths(t, ValidateVM(vm))
		checkPaths(t, ValidateVM(vm, WithInstancetype(it), WithPreference(pref)))
		if got := NewVMIFromVM(vm); got != nil {
			_ = ApplyInstancetype(&got.Spec, field.NewPath("spec"), it, pref)
			_ = ApplyInstancetype(&got.Spec, nil, nil, pref)
		}
	})
}

func checkPaths(t *testing.T, errs field.ErrorList) {
	t.Helper()
	for _, e := range errs {
		if e.Field == "" || e.Detail == "" && e.Type != field.ErrorTypeDuplicate && e.Type != field.ErrorTypeNotFound &&
			e.Type != field.ErrorTypeNotSupported && e.Type != field.ErrorTypeTooMany && e.Type != field.ErrorTypeTooLong {
			t.Errorf("error without a field or a reason: %#v", e)
		}
	}
}
