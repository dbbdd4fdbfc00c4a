package spec

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	virtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
)

func prefWithMachine(m string) *instancetypev1beta1.VirtualMachinePreferenceSpec {
	return &instancetypev1beta1.VirtualMachinePreferenceSpec{Machine: &instancetypev1beta1.MachinePreferences{PreferredMachineType: m}}
}

func smallIT() *instancetypev1beta1.VirtualMachineInstancetypeSpec {
	return &instancetypev1beta1.VirtualMachineInstancetypeSpec{
		CPU:    instancetypev1beta1.CPUInstancetype{Guest: 4},
		Memory: instancetypev1beta1.MemoryInstancetype{Guest: *qty("2Gi")},
	}
}

func topo(t instancetypev1beta1.PreferredCPUTopology) *instancetypev1beta1.VirtualMachinePreferenceSpec {
	return &instancetypev1beta1.VirtualMachinePreferenceSpec{CPU: &instancetypev1beta1.CPUPreferences{PreferredCPUTopology: &t}}
}

// templateSpec is a VM template that leaves compute to the instancetype.
func templateSpec() *virtv1.VirtualMachineInstanceSpec {
	s := userVMI().Spec
	s.Domain.Memory = nil
	return &s
}

func TestApplyInstancetypeTopology(t *testing.T) {
	spread := topo(instancetypev1beta1.Spread)
	across := instancetypev1beta1.SpreadAcrossSocketsCoresThreads
	spread3 := topo(instancetypev1beta1.Spread)
	spread3.CPU.SpreadOptions = &instancetypev1beta1.SpreadOptions{Across: &across, Ratio: u32(2)}
	for _, r := range []struct {
		name string
		pref *instancetypev1beta1.VirtualMachinePreferenceSpec
		want [3]uint32 // sockets, cores, threads
	}{
		{"default sockets", nil, [3]uint32{4, 1, 1}},
		{"cores", topo(instancetypev1beta1.Cores), [3]uint32{1, 4, 1}},
		{"threads", topo(instancetypev1beta1.Threads), [3]uint32{1, 1, 4}},
		{"spread sockets/cores ratio 2", spread, [3]uint32{2, 2, 1}},
		{"spread sockets/cores/threads", spread3, [3]uint32{1, 2, 2}},
	} {
		t.Run(r.name, func(t *testing.T) {
			s := templateSpec()
			if errs := ApplyInstancetype(s, field.NewPath("spec", "template", "spec"), smallIT(), r.pref); len(errs) > 0 {
				t.Fatal(errs)
			}
			c := s.Domain.CPU
			if got := [3]uint32{c.Sockets, c.Cores, c.Threads}; got != r.want {
				t.Errorf("topology %v, want %v", got, r.want)
			}
			if s.Domain.Memory.Guest.String() != "2Gi" {
				t.Errorf("guest memory %v", s.Domain.Memory.Guest)
			}
		})
	}
}

func TestApplyInstancetypeFields(t *testing.T) {
	model := "Skylake"
	it := smallIT()
	it.CPU.Model = &model
	it.CPU.DedicatedCPUPlacement = boolPtr(true)
	it.Memory.OvercommitPercent = 25
	it.Memory.Hugepages = &virtv1.Hugepages{PageSize: "2Mi"}
	it.NodeSelector = map[string]string{"zone": "a"}
	it.SchedulerName = "sched"
	pol := virtv1.IOThreadsPolicyAuto
	it.IOThreadsPolicy = &pol
	s := templateSpec()
	if errs := ApplyInstancetype(s, field.NewPath("spec"), it, nil); len(errs) > 0 {
		t.Fatal(errs)
	}
	got := []any{s.Domain.CPU.Model, s.Domain.CPU.DedicatedCPUPlacement, s.Domain.Resources.Requests.Memory().String(),
		s.Domain.Memory.Hugepages.PageSize, s.NodeSelector["zone"], s.SchedulerName, *s.Domain.IOThreadsPolicy}
	want := []any{"Skylake", true, "1536Mi", "2Mi", "a", "sched", virtv1.IOThreadsPolicyAuto}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestApplyInstancetypeConflicts(t *testing.T) {
	bp := field.NewPath("spec", "template", "spec")
	for _, r := range []struct {
		name   string
		mutate func(*virtv1.VirtualMachineInstanceSpec)
		it     func(*instancetypev1beta1.VirtualMachineInstancetypeSpec)
		want   []errKey
	}{
		{"cpu topology", func(s *virtv1.VirtualMachineInstanceSpec) { s.Domain.CPU = &virtv1.CPU{Sockets: 2, Cores: 2} }, nil,
			[]errKey{forb("spec.template.spec.domain.cpu.sockets"), forb("spec.template.spec.domain.cpu.cores")}},
		{"cpu requests and limits", func(s *virtv1.VirtualMachineInstanceSpec) {
			s.Domain.Resources.Requests = k8sv1.ResourceList{k8sv1.ResourceCPU: *qty("1")}
			s.Domain.Resources.Limits = k8sv1.ResourceList{k8sv1.ResourceCPU: *qty("1")}
		}, nil, []errKey{forb("spec.template.spec.domain.resources.requests.cpu"), forb("spec.template.spec.domain.resources.limits.cpu")}},
		{"cpu model only when both set", func(s *virtv1.VirtualMachineInstanceSpec) { s.Domain.CPU = &virtv1.CPU{Model: "a"} },
			func(it *instancetypev1beta1.VirtualMachineInstancetypeSpec) { m := "b"; it.CPU.Model = &m },
			[]errKey{forb("spec.template.spec.domain.cpu.model")}},
		{"guest memory", func(s *virtv1.VirtualMachineInstanceSpec) { s.Domain.Memory = &virtv1.Memory{Guest: qty("1Gi")} }, nil,
			[]errKey{forb("spec.template.spec.domain.memory")}},
		{"memory request", func(s *virtv1.VirtualMachineInstanceSpec) {
			s.Domain.Resources.Requests = k8sv1.ResourceList{k8sv1.ResourceMemory: *qty("1Gi")}
		}, nil, []errKey{forb("spec.template.spec.domain.resources.requests.memory")}},
		{"node selector", func(s *virtv1.VirtualMachineInstanceSpec) { s.NodeSelector = map[string]string{"a": "b"} },
			func(it *instancetypev1beta1.VirtualMachineInstancetypeSpec) {
				it.NodeSelector = map[string]string{"c": "d"}
			},
			[]errKey{forb("spec.template.spec.nodeSelector")}},
		{"gpus", func(s *virtv1.VirtualMachineInstanceSpec) { s.Domain.Devices.GPUs = []virtv1.GPU{{Name: "a"}} },
			func(it *instancetypev1beta1.VirtualMachineInstancetypeSpec) { it.GPUs = []virtv1.GPU{{Name: "b"}} },
			[]errKey{forb("spec.template.spec.domain.devices.gpus")}},
	} {
		t.Run(r.name, func(t *testing.T) {
			s := templateSpec()
			r.mutate(s)
			it := smallIT()
			if r.it != nil {
				r.it(it)
			}
			before := s.DeepCopy()
			assertErrs(t, ApplyInstancetype(s, bp, it, nil), r.want...)
			if diff := cmp.Diff(before, s, quantityCmp); diff != "" {
				t.Errorf("spec changed despite conflicts:\n%s", diff)
			}
		})
	}
}

func TestApplyPreferenceFillsOnlyUnset(t *testing.T) {
	tz := virtv1.ClockOffsetTimezone("UTC")
	grace := int64(600)
	pref := &instancetypev1beta1.VirtualMachinePreferenceSpec{
		Devices: &instancetypev1beta1.DevicePreferences{
			PreferredDiskBus: "scsi", PreferredInterfaceModel: "e1000e", PreferredAutoattachGraphicsDevice: boolPtr(false),
			PreferredCdromBus: "sata", PreferredDiskCache: "writeback",
		},
		Features:                               &instancetypev1beta1.FeaturePreferences{PreferredSmm: &virtv1.FeatureState{}},
		Firmware:                               &instancetypev1beta1.FirmwarePreferences{PreferredEfi: &virtv1.EFI{SecureBoot: boolPtr(true)}},
		Machine:                                &instancetypev1beta1.MachinePreferences{PreferredMachineType: "pc-q35-8.0"},
		Clock:                                  &instancetypev1beta1.ClockPreferences{PreferredClockOffset: &virtv1.ClockOffset{Timezone: &tz}},
		PreferredTerminationGracePeriodSeconds: &grace,
		CPU:                                    &instancetypev1beta1.CPUPreferences{PreferredCPUFeatures: []virtv1.CPUFeature{{Name: "vmx"}}},
	}
	s := templateSpec()
	s.Domain.Devices.Disks[0].Disk.Bus = "sata" // set by the VM: must win
	s.Domain.Devices.Interfaces = []virtv1.Interface{{Name: "default", InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Bridge: &virtv1.InterfaceBridge{}}}}
	s.Networks = []virtv1.Network{{Name: "default", NetworkSource: virtv1.NetworkSource{Pod: &virtv1.PodNetwork{}}}}
	if errs := ApplyInstancetype(s, field.NewPath("spec"), smallIT(), pref); len(errs) > 0 {
		t.Fatal(errs)
	}
	got := []any{
		s.Domain.Devices.Disks[0].Disk.Bus, s.Domain.Devices.Disks[1].Disk.Bus, s.Domain.Devices.Interfaces[0].Model,
		*s.Domain.Devices.AutoattachGraphicsDevice, s.Domain.Devices.Disks[0].Cache, featureOn(s.Domain.Features.SMM),
		*s.Domain.Firmware.Bootloader.EFI.SecureBoot, s.Domain.Machine.Type, string(*s.Domain.Clock.Timezone),
		*s.TerminationGracePeriodSeconds, s.Domain.CPU.Features[0].Name,
	}
	want := []any{virtv1.DiskBus("sata"), virtv1.DiskBus("scsi"), "e1000e", false, virtv1.DriverCache("writeback"), true,
		true, "pc-q35-8.0", "UTC", int64(600), "vmx"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// The expanded, defaulted result must validate.
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "y"}, Spec: *s}
	DefaultVMI(vmi)
	assertErrs(t, ValidateVMI(vmi))
}

func TestPreferenceRequirements(t *testing.T) {
	pref := &instancetypev1beta1.VirtualMachinePreferenceSpec{Requirements: &instancetypev1beta1.PreferenceRequirements{
		CPU:    &instancetypev1beta1.CPUPreferenceRequirement{Guest: 8},
		Memory: &instancetypev1beta1.MemoryPreferenceRequirement{Guest: *qty("4Gi")},
	}}
	assertErrs(t, ApplyInstancetype(templateSpec(), field.NewPath("spec"), smallIT(), pref),
		inv("spec.domain.cpu"), inv("spec.domain.memory.guest"))
	// Without an instancetype the VM's own values count.
	s := userVMI().Spec
	s.Domain.CPU = &virtv1.CPU{Sockets: 8}
	s.Domain.Memory.Guest = qty("4Gi")
	assertErrs(t, ApplyInstancetype(&s, field.NewPath("spec"), nil, pref))
}

func TestMatcherHelpers(t *testing.T) {
	ns := &instancetypev1beta1.VirtualMachineInstancetype{ObjectMeta: metav1.ObjectMeta{Name: "small"}, Spec: *smallIT()}
	cl := &instancetypev1beta1.VirtualMachineClusterInstancetype{ObjectMeta: metav1.ObjectMeta{Name: "small"},
		Spec: instancetypev1beta1.VirtualMachineInstancetypeSpec{CPU: instancetypev1beta1.CPUInstancetype{Guest: 1}}}
	for _, r := range []struct {
		kind  string
		guest uint32
		err   error
	}{
		{"", 1, nil},
		{"VirtualMachineClusterInstancetype", 1, nil},
		{"virtualmachineclusterinstancetypes", 1, nil},
		{"VirtualMachineInstancetype", 4, nil},
		{"virtualmachineinstancetype", 4, nil},
		{"Flavor", 0, ErrUnknownKind},
	} {
		got, err := InstancetypeSpecFor(&virtv1.InstancetypeMatcher{Name: "small", Kind: r.kind}, ns, cl)
		if !errors.Is(err, r.err) || (err == nil && got.CPU.Guest != r.guest) {
			t.Errorf("kind %q: got %v, %v", r.kind, got, err)
		}
	}
	if _, err := InstancetypeSpecFor(&virtv1.InstancetypeMatcher{Name: "other"}, ns, cl); !errors.Is(err, ErrNotMatched) {
		t.Errorf("name mismatch: %v", err)
	}
	pns := &instancetypev1beta1.VirtualMachinePreference{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: *prefWithMachine("a")}
	pcl := &instancetypev1beta1.VirtualMachineClusterPreference{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: *prefWithMachine("b")}
	got, err := PreferenceSpecFor(&virtv1.PreferenceMatcher{Name: "p"}, pns, pcl)
	if err != nil || got.Machine.PreferredMachineType != "b" {
		t.Errorf("cluster preference: %v %v", got, err)
	}
	got, err = PreferenceSpecFor(&virtv1.PreferenceMatcher{Name: "p", Kind: "VirtualMachinePreference"}, pns, nil)
	if err != nil || got.Machine.PreferredMachineType != "a" {
		t.Errorf("namespaced preference: %v %v", got, err)
	}
	if _, err := PreferenceSpecFor(&virtv1.PreferenceMatcher{Name: "p", Kind: "VirtualMachinePreference"}, nil, pcl); !errors.Is(err, ErrNotMatched) {
		t.Errorf("missing namespaced preference: %v", err)
	}
}

func TestApplyAnnotations(t *testing.T) {
	it := smallIT()
	it.Annotations = map[string]string{"it": "1"}
	pref := &instancetypev1beta1.VirtualMachinePreferenceSpec{Annotations: map[string]string{"p": "2", "keep": "pref"}}
	meta := &metav1.ObjectMeta{Annotations: map[string]string{"keep": "vm"}}
	if errs := ApplyAnnotations(meta, it, pref); len(errs) > 0 {
		t.Fatal(errs)
	}
	if diff := cmp.Diff(map[string]string{"it": "1", "p": "2", "keep": "vm"}, meta.Annotations); diff != "" {
		t.Error(diff)
	}
	meta = &metav1.ObjectMeta{Annotations: map[string]string{"it": "other"}}
	assertErrs(t, ApplyAnnotations(meta, it, nil), forb("metadata.annotations[it]"))
}
