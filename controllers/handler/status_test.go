package handler_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/controllers/handler"
	"github.com/virtkit/virtkit/virt/domain"
	"github.com/virtkit/virtkit/virt/guestagent"
	"github.com/virtkit/virtkit/virt/launcher"
	"github.com/virtkit/virtkit/virt/network"
)

var (
	t0      = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	t0Meta  = metav1.NewTime(t0)
	earlier = metav1.NewTime(t0.Add(-time.Hour))
)

func running(st domain.State, r domain.Reason) *domain.DomainState {
	return &domain.DomainState{State: st, Reason: r}
}

func masqueradePlan() network.Plan {
	return network.Plan{"default": {Interface: "default", Binding: network.BindingMasquerade, TapName: "tap0",
		MAC: "02:00:00:00:00:01", Pod: network.PodInterface{Name: "eth0", IPs: []string{"10.244.0.7/24", "fd00::7/64"}}}}
}

func ready(status corev1.ConditionStatus, reason, msg string, at metav1.Time) virtv1.VirtualMachineInstanceCondition {
	return virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceReady, Status: status, Reason: reason, Message: msg, LastTransitionTime: at}
}

var migratable = virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionTrue, LastTransitionTime: t0Meta}

// Status maps what the handler knows to the VMI's status, as KubeVirt's
// handler fills it.
func TestStatus(t *testing.T) {
	guest := resource.MustParse("128Mi")
	runningDomain := handler.RunningDomain{Machine: "pc-q35-7.2", Topology: &virtv1.CPUTopology{Sockets: 1, Cores: 1, Threads: 1},
		MemoryBytes: 128 << 20, Targets: map[string]string{"root": "vda"}}
	runningStatus := func(conds ...virtv1.VirtualMachineInstanceCondition) virtv1.VirtualMachineInstanceStatus {
		return virtv1.VirtualMachineInstanceStatus{
			NodeName: node, Phase: virtv1.Running,
			PhaseTransitionTimestamps: []virtv1.VirtualMachineInstancePhaseTransitionTimestamp{{Phase: virtv1.Running, PhaseTransitionTimestamp: t0Meta}},
			Conditions:                conds,
			Interfaces: []virtv1.VirtualMachineInstanceNetworkInterface{{Name: "default", MAC: "02:00:00:00:00:01",
				IP: "10.244.0.7", IPs: []string{"10.244.0.7", "fd00::7"}, PodInterfaceName: "eth0", InfoSource: "domain", QueueCount: 1}},
			MigrationMethod: virtv1.BlockMigration, MigrationTransport: virtv1.MigrationTransportUnix,
			VolumeStatus:       []virtv1.VolumeStatus{{Name: "root", Target: "vda"}},
			Machine:            &virtv1.Machine{Type: "pc-q35-7.2"},
			CurrentCPUTopology: &virtv1.CPUTopology{Sockets: 1, Cores: 1, Threads: 1},
			Memory:             &virtv1.MemoryStatus{GuestAtBoot: &guest, GuestCurrent: &guest, GuestRequested: &guest},
		}
	}
	ended := func(phase virtv1.VirtualMachineInstancePhase, reason string, c virtv1.VirtualMachineInstanceCondition) virtv1.VirtualMachineInstanceStatus {
		st := virtv1.VirtualMachineInstanceStatus{NodeName: node, Phase: phase, Reason: reason,
			PhaseTransitionTimestamps: []virtv1.VirtualMachineInstancePhaseTransitionTimestamp{
				{Phase: virtv1.Running, PhaseTransitionTimestamp: earlier}, {Phase: phase, PhaseTransitionTimestamp: t0Meta}},
			Conditions: []virtv1.VirtualMachineInstanceCondition{c}}
		return st
	}
	runningVMI := func() *virtv1.VirtualMachineInstance {
		v := scheduledVMI("vm1")
		v.Status.Phase = virtv1.Running
		v.Status.PhaseTransitionTimestamps = []virtv1.VirtualMachineInstancePhaseTransitionTimestamp{{Phase: virtv1.Running, PhaseTransitionTimestamp: earlier}}
		v.Status.Conditions = []virtv1.VirtualMachineInstanceCondition{ready(corev1.ConditionTrue, "", "", earlier)}
		return v
	}
	for _, tc := range []struct {
		name  string
		vmi   *virtv1.VirtualMachineInstance
		facts handler.Facts
		want  virtv1.VirtualMachineInstanceStatus
	}{{
		name:  "scheduled guest starts running",
		vmi:   scheduledVMI("vm1"),
		facts: handler.Facts{Domain: running(domain.StateRunning, domain.ReasonRunningBooted), Network: masqueradePlan(), Running: runningDomain},
		want:  runningStatus(ready(corev1.ConditionTrue, "", "", t0Meta), migratable),
	}, {
		name:  "paused by the user",
		vmi:   runningVMI(),
		facts: handler.Facts{Domain: running(domain.StatePaused, domain.ReasonPausedUser), Network: masqueradePlan(), Running: runningDomain},
		want: func() virtv1.VirtualMachineInstanceStatus {
			st := runningStatus(ready(corev1.ConditionFalse, domain.ConditionGuestPaused, "the virtual machine is paused", t0Meta),
				virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstancePaused, Status: corev1.ConditionTrue,
					Reason: domain.ConditionPausedByUser, Message: "VMI was paused by user", LastTransitionTime: t0Meta}, migratable)
			st.PhaseTransitionTimestamps[0].PhaseTransitionTimestamp = earlier
			return st
		}(),
	}, {
		name: "the guest's agent connects",
		vmi:  runningVMI(),
		facts: handler.Facts{Domain: running(domain.StateRunning, domain.ReasonRunningBooted), Network: masqueradePlan(), Running: runningDomain,
			Agent: &handler.AgentFacts{Connected: true, Info: virtv1.VirtualMachineInstanceGuestAgentInfo{OS: virtv1.VirtualMachineInstanceGuestOSInfo{Name: "Debian", ID: "debian"}},
				Interfaces: []guestagent.Interface{{Name: "enp1s0", MAC: "02:00:00:00:00:01", IPs: []string{"10.0.2.2"}}, {Name: "eth9", MAC: "02:99:99:99:99:99"}}}},
		want: func() virtv1.VirtualMachineInstanceStatus {
			st := runningStatus(ready(corev1.ConditionTrue, "", "", earlier), migratable,
				virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceAgentConnected, Status: corev1.ConditionTrue, LastTransitionTime: t0Meta})
			st.PhaseTransitionTimestamps[0].PhaseTransitionTimestamp = earlier
			st.GuestOSInfo = virtv1.VirtualMachineInstanceGuestOSInfo{Name: "Debian", ID: "debian"}
			st.Interfaces[0].InterfaceName, st.Interfaces[0].InfoSource = "enp1s0", "domain, guest-agent"
			// As KubeVirt merges the agent's view: the pod's IPv4 address
			// stays, the IPv6 one goes (the guest has none), the guest's
			// own NIC follows.
			st.Interfaces[0].IPs = []string{"10.244.0.7"}
			st.Interfaces = append(st.Interfaces, virtv1.VirtualMachineInstanceNetworkInterface{MAC: "02:99:99:99:99:99", InterfaceName: "eth9", InfoSource: "guest-agent"})
			return st
		}(),
	}, {
		name: "the guest's agent goes away; the handler froze the guest",
		vmi: func() *virtv1.VirtualMachineInstance {
			v := runningVMI()
			v.Status.Conditions = append(v.Status.Conditions, virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceAgentConnected, Status: corev1.ConditionTrue, LastTransitionTime: earlier})
			v.Status.GuestOSInfo = virtv1.VirtualMachineInstanceGuestOSInfo{Name: "Debian"}
			return v
		}(),
		facts: handler.Facts{Domain: running(domain.StateRunning, domain.ReasonRunningBooted), Network: masqueradePlan(), Running: runningDomain,
			Agent: &handler.AgentFacts{}, Frozen: true},
		want: func() virtv1.VirtualMachineInstanceStatus {
			st := runningStatus(ready(corev1.ConditionTrue, "", "", earlier), migratable)
			st.PhaseTransitionTimestamps[0].PhaseTransitionTimestamp = earlier
			st.FSFreezeStatus = "frozen"
			return st
		}(),
	}, {
		name: "a restarted handler has not asked the agent yet: what was reported stays",
		vmi: func() *virtv1.VirtualMachineInstance {
			v := runningVMI()
			v.Status.Conditions = append(v.Status.Conditions, virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceAgentConnected, Status: corev1.ConditionTrue, LastTransitionTime: earlier})
			v.Status.GuestOSInfo = virtv1.VirtualMachineInstanceGuestOSInfo{Name: "Debian"}
			v.Status.Interfaces = []virtv1.VirtualMachineInstanceNetworkInterface{{Name: "default", MAC: "02:00:00:00:00:01", InterfaceName: "enp1s0", InfoSource: "domain, guest-agent",
				IP: "10.244.0.7", IPs: []string{"10.244.0.7"}}, {MAC: "02:99:99:99:99:99", InterfaceName: "eth9", InfoSource: "guest-agent"}}
			return v
		}(),
		facts: handler.Facts{Domain: running(domain.StateRunning, domain.ReasonRunningBooted), Network: masqueradePlan(), Running: runningDomain},
		want: func() virtv1.VirtualMachineInstanceStatus {
			st := runningStatus(ready(corev1.ConditionTrue, "", "", earlier),
				virtv1.VirtualMachineInstanceCondition{Type: virtv1.VirtualMachineInstanceAgentConnected, Status: corev1.ConditionTrue, LastTransitionTime: earlier}, migratable)
			st.PhaseTransitionTimestamps[0].PhaseTransitionTimestamp = earlier
			st.GuestOSInfo = virtv1.VirtualMachineInstanceGuestOSInfo{Name: "Debian"}
			st.Interfaces[0].InterfaceName, st.Interfaces[0].InfoSource = "enp1s0", "domain, guest-agent"
			st.Interfaces[0].IPs = []string{"10.244.0.7"}
			st.Interfaces = append(st.Interfaces, virtv1.VirtualMachineInstanceNetworkInterface{MAC: "02:99:99:99:99:99", InterfaceName: "eth9", InfoSource: "guest-agent"})
			return st
		}(),
	}, {
		name:  "guest shut down",
		vmi:   runningVMI(),
		facts: handler.Facts{Domain: running(domain.StateShutoff, domain.ReasonShutoffShutdown)},
		want:  ended(virtv1.Succeeded, "", ready(corev1.ConditionFalse, virtv1.GuestNotRunningReason, "the guest shut down", t0Meta)),
	}, {
		name:  "qemu killed",
		vmi:   runningVMI(),
		facts: handler.Facts{Domain: running(domain.StateShutoff, domain.ReasonShutoffCrashed)},
		want: ended(virtv1.Failed, handler.ReasonGuestCrashed, ready(corev1.ConditionFalse, handler.ReasonGuestCrashed,
			"QEMU ended unexpectedly or the guest crashed (domain shut off, reason crashed)", t0Meta)),
	}, {
		name:  "guest panicked",
		vmi:   runningVMI(),
		facts: handler.Facts{Domain: running(domain.StateCrashed, domain.ReasonCrashedPanicked)},
		want:  ended(virtv1.Failed, handler.ReasonGuestCrashed, ready(corev1.ConditionFalse, handler.ReasonGuestCrashed, "the guest panicked", t0Meta)),
	}, {
		name:  "domain vanished",
		vmi:   runningVMI(),
		facts: handler.Facts{},
		want: ended(virtv1.Failed, handler.ReasonDomainNotFound, ready(corev1.ConditionFalse, handler.ReasonDomainNotFound,
			"the guest's domain is gone from the launcher's libvirt", t0Meta)),
	}, {
		name:  "launcher ended with a crash",
		vmi:   runningVMI(),
		facts: handler.Facts{Ending: new(handler.LauncherEnding(launcher.Result{Code: launcher.ExitGuestCrashed, Reason: "guest crashed (panicked)"}))},
		want:  ended(virtv1.Failed, handler.ReasonGuestCrashed, ready(corev1.ConditionFalse, handler.ReasonGuestCrashed, "guest crashed (panicked)", t0Meta)),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.vmi.DeepCopy()
			got := handler.Status(tc.vmi, tc.facts, t0.Add(300*time.Millisecond))
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("status (-want +got):\n%s", d)
			}
			if d := cmp.Diff(before, tc.vmi); d != "" {
				t.Errorf("Status changed its input:\n%s", d)
			}
			// Applied, the same facts give the same status: no second write.
			again := tc.vmi.DeepCopy()
			again.Status = got
			if st := handler.Status(again, tc.facts, t0.Add(time.Hour)); !equality.Semantic.DeepEqual(st, got) {
				t.Errorf("a second Status differs:\n%s", cmp.Diff(got, st))
			}
		})
	}
}

func TestLauncherEnding(t *testing.T) {
	for _, tc := range []struct {
		code   int
		phase  virtv1.VirtualMachineInstancePhase
		reason string
	}{
		{launcher.ExitOK, virtv1.Succeeded, ""},
		{launcher.ExitGuestCrashed, virtv1.Failed, handler.ReasonGuestCrashed},
		{launcher.ExitGuestDestroyed, virtv1.Failed, handler.ReasonGuestDestroyed},
		{launcher.ExitLibvirtdDied, virtv1.Failed, handler.ReasonLibvirtdDied},
		{launcher.ExitSetupFailed, virtv1.Failed, handler.ReasonLauncherSetupFailed},
		{137, virtv1.Failed, handler.ReasonLauncherFailed},
	} {
		e := handler.LauncherEnding(launcher.Result{Code: tc.code})
		if d := cmp.Diff(handler.Ending{Phase: tc.phase, Reason: tc.reason, Message: e.Message}, e); d != "" || e.Message == "" {
			t.Errorf("exit %d (-want +got):\n%s (message %q)", tc.code, d, e.Message)
		}
	}
	if e := handler.LostEnding(t0, t0.Add(29*time.Second), 30*time.Second); e != nil {
		t.Errorf("lost before the timeout: %+v", e)
	}
	if e := handler.LostEnding(t0, t0.Add(30*time.Second), 30*time.Second); e == nil || e.Reason != handler.ReasonLauncherLost {
		t.Errorf("lost after the timeout: %+v", e)
	}
}

func TestNextShutdownStep(t *testing.T) {
	grace := func(s int64) *virtv1.VirtualMachineInstance {
		v := scheduledVMI("vm1")
		v.Spec.TerminationGracePeriodSeconds = &s
		return v
	}
	for _, tc := range []struct {
		name      string
		vmi       *virtv1.VirtualMachineInstance
		requested time.Time
		now       time.Time
		want      handler.ShutdownStep
	}{
		{"first: ACPI", grace(60), time.Time{}, t0, handler.ShutdownStep{RequestACPI: true, Wait: time.Minute}},
		{"within the grace period", grace(60), t0, t0.Add(15 * time.Second), handler.ShutdownStep{Wait: 45 * time.Second}},
		{"grace period over", grace(60), t0, t0.Add(time.Minute), handler.ShutdownStep{Destroy: true}},
		{"no grace period: destroy at once", grace(0), time.Time{}, t0, handler.ShutdownStep{Destroy: true}},
		{"KubeVirt's default of 30 s", func() *virtv1.VirtualMachineInstance {
			v := scheduledVMI("vm1")
			v.Spec.TerminationGracePeriodSeconds = nil
			return v
		}(), time.Time{}, t0, handler.ShutdownStep{RequestACPI: true, Wait: 30 * time.Second}},
	} {
		if d := cmp.Diff(tc.want, handler.NextShutdownStep(tc.vmi, tc.requested, tc.now)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
}

// LiveMigratable and the migration method, as KubeVirt reports them.
func TestMigratability(t *testing.T) {
	vmi := func(change func(v *virtv1.VirtualMachineInstance)) *virtv1.VirtualMachineInstance {
		v := scheduledVMI("vm1")
		change(v)
		return v
	}
	pvc := virtv1.Volume{Name: "data", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-claim"}}}}
	hotplugged := func(mode corev1.PersistentVolumeAccessMode) func(v *virtv1.VirtualMachineInstance) {
		return func(v *virtv1.VirtualMachineInstance) {
			hot := pvc.DeepCopy()
			hot.PersistentVolumeClaim.Hotpluggable = true
			v.Spec.Volumes = []virtv1.Volume{*hot}
			v.Spec.Domain.Devices.Disks = []virtv1.Disk{{Name: "data"}}
			v.Status.VolumeStatus = []virtv1.VolumeStatus{{Name: "data", Target: "sda", HotplugVolume: &virtv1.HotplugVolumeStatus{},
				PersistentVolumeClaimInfo: &virtv1.PersistentVolumeClaimInfo{AccessModes: []corev1.PersistentVolumeAccessMode{mode}}}}
		}
	}
	for _, tc := range []struct {
		name   string
		vmi    *virtv1.VirtualMachineInstance
		status corev1.ConditionStatus
		reason string
		method virtv1.VirtualMachineInstanceMigrationMethod
		claims map[string]*virtv1.PersistentVolumeClaimInfo // Facts.Claims
	}{
		{"containerDisk and masquerade", scheduledVMI("vm1"), corev1.ConditionTrue, "", virtv1.BlockMigration, nil},
		{"bridge on the pod network", vmi(func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Interfaces[0].InterfaceBindingMethod = virtv1.InterfaceBindingMethod{Bridge: &virtv1.InterfaceBridge{}}
		}), corev1.ConditionFalse, virtv1.VirtualMachineInstanceReasonInterfaceNotMigratable, virtv1.BlockMigration, nil},
		{"bridge allowed by annotation", vmi(func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Interfaces[0].InterfaceBindingMethod = virtv1.InterfaceBindingMethod{Bridge: &virtv1.InterfaceBridge{}}
			v.Annotations = map[string]string{handler.AllowPodBridgeMigrationAnnotation: ""}
		}), corev1.ConditionTrue, "", virtv1.BlockMigration, nil},
		{"claim not known to be shared", vmi(func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Volumes = []virtv1.Volume{pvc}
			v.Spec.Domain.Devices.Disks = []virtv1.Disk{{Name: "data"}}
		}), corev1.ConditionFalse, virtv1.VirtualMachineInstanceReasonDisksNotMigratable, virtv1.LiveMigration, nil},
		{"ReadWriteMany claim", vmi(func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Volumes = []virtv1.Volume{pvc}
			v.Spec.Domain.Devices.Disks = []virtv1.Disk{{Name: "data"}}
			v.Status.VolumeStatus = []virtv1.VolumeStatus{{Name: "data", PersistentVolumeClaimInfo: &virtv1.PersistentVolumeClaimInfo{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}}}}
		}), corev1.ConditionTrue, "", virtv1.LiveMigration, nil},
		{name: "ReadWriteMany claim as the handler read it", vmi: vmi(func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Volumes = []virtv1.Volume{pvc}
			v.Spec.Domain.Devices.Disks = []virtv1.Disk{{Name: "data"}}
		}), status: corev1.ConditionTrue, method: virtv1.LiveMigration, claims: map[string]*virtv1.PersistentVolumeClaimInfo{
			"data": {ClaimName: "data-claim", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}}}},
		{name: "ReadWriteOnce claim as the handler read it, over a stale report", vmi: vmi(func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Volumes = []virtv1.Volume{pvc}
			v.Spec.Domain.Devices.Disks = []virtv1.Disk{{Name: "data"}}
			v.Status.VolumeStatus = []virtv1.VolumeStatus{{Name: "data", PersistentVolumeClaimInfo: &virtv1.PersistentVolumeClaimInfo{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}}}}
		}), status: corev1.ConditionFalse, reason: virtv1.VirtualMachineInstanceReasonDisksNotMigratable, method: virtv1.LiveMigration,
			claims: map[string]*virtv1.PersistentVolumeClaimInfo{
				"data": {ClaimName: "data-claim", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}}},
		{"a hotplugged ReadWriteMany claim: brought to the target", vmi(hotplugged(corev1.ReadWriteMany)), corev1.ConditionTrue, "", virtv1.LiveMigration, nil},
		{"a hotplugged ReadWriteOnce claim", vmi(hotplugged(corev1.ReadWriteOnce)),
			corev1.ConditionFalse, virtv1.VirtualMachineInstanceReasonDisksNotMigratable, virtv1.LiveMigration, nil},
		{"virtiofs", vmi(func(v *virtv1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Filesystems = []virtv1.Filesystem{{Name: "fs", Virtiofs: &virtv1.FilesystemVirtiofs{}}}
		}), corev1.ConditionFalse, virtv1.VirtualMachineInstanceReasonVirtIOFSNotMigratable, virtv1.BlockMigration, nil},
		{"a persistent TPM (backend storage): its state moves to a claim of the target's", vmi(func(v *virtv1.VirtualMachineInstance) {
			yes := true
			v.Spec.Domain.Devices.TPM = &virtv1.TPMDevice{Persistent: &yes}
			v.Status.VolumeStatus = []virtv1.VolumeStatus{{Name: "persistent-state-for-this-vm", PersistentVolumeClaimInfo: &virtv1.PersistentVolumeClaimInfo{
				ClaimName: "persistent-state-for-vmi-x7k2p", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}}}
		}), corev1.ConditionTrue, "", virtv1.BlockMigration, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The hotplug volumes are reported as before (as hotplug does).
			var hot []virtv1.VolumeStatus
			for _, vs := range tc.vmi.Status.VolumeStatus {
				if vs.HotplugVolume != nil {
					hot = append(hot, vs)
				}
			}
			st := handler.Status(tc.vmi, handler.Facts{Domain: running(domain.StateRunning, domain.ReasonRunningBooted), Claims: tc.claims, Hotplug: hot}, t0)
			// The volume's status reports the claim the handler read, else
			// the one reported before.
			for _, vs := range st.VolumeStatus {
				want := tc.claims[vs.Name]
				for _, old := range tc.vmi.Status.VolumeStatus {
					if want == nil && old.Name == vs.Name {
						want = old.PersistentVolumeClaimInfo
					}
				}
				if d := cmp.Diff(want, vs.PersistentVolumeClaimInfo); d != "" {
					t.Errorf("volume %s's claim (-want +got):\n%s", vs.Name, d)
				}
			}
			var got *virtv1.VirtualMachineInstanceCondition
			for i := range st.Conditions {
				if st.Conditions[i].Type == virtv1.VirtualMachineInstanceIsMigratable {
					got = &st.Conditions[i]
				}
			}
			if got == nil || got.Status != tc.status || got.Reason != tc.reason || (tc.status == corev1.ConditionFalse) != (got.Message != "") {
				t.Errorf("LiveMigratable = %+v, want %s %q with a message when false", got, tc.status, tc.reason)
			}
			if st.MigrationMethod != tc.method {
				t.Errorf("migration method %s, want %s", st.MigrationMethod, tc.method)
			}
		})
	}
}

// The running domain's document gives the machine type, topology, memory
// and each volume's device, found by KubeVirt's ua- aliases; a CD-ROM
// drive without media is no volume's.
func TestRunningDomainOf(t *testing.T) {
	doc := &libvirtxml.Domain{
		OS:            &libvirtxml.DomainOS{Type: &libvirtxml.DomainOSType{Machine: "pc-q35-7.2"}},
		CPU:           &libvirtxml.DomainCPU{Topology: &libvirtxml.DomainCPUTopology{Sockets: 2, Cores: 1, Threads: 1}},
		CurrentMemory: &libvirtxml.DomainCurrentMemory{Value: 262144, Unit: "KiB"},
		Devices: &libvirtxml.DomainDeviceList{Disks: []libvirtxml.DomainDisk{
			{Alias: &libvirtxml.DomainAlias{Name: "ua-root"}, Target: &libvirtxml.DomainDiskTarget{Dev: "vda"}},
			{Alias: &libvirtxml.DomainAlias{Name: "ua-cloudinit"}, Target: &libvirtxml.DomainDiskTarget{Dev: "vdb"}},
			{Alias: &libvirtxml.DomainAlias{Name: "sata0-0-0"}, Target: &libvirtxml.DomainDiskTarget{Dev: "sda"}},
			{Device: "cdrom", Alias: &libvirtxml.DomainAlias{Name: "ua-installer"}, Target: &libvirtxml.DomainDiskTarget{Dev: "sdb"}},
			{Device: "cdrom", Alias: &libvirtxml.DomainAlias{Name: "ua-drivers"}, Target: &libvirtxml.DomainDiskTarget{Dev: "sdc"},
				Source: &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: "/var/run/kubevirt/hotplug-disks/drivers.img"}}},
		}},
	}
	want := handler.RunningDomain{Machine: "pc-q35-7.2", Topology: &virtv1.CPUTopology{Sockets: 2, Cores: 1, Threads: 1},
		MemoryBytes: 256 << 20, Targets: map[string]string{"root": "vda", "cloudinit": "vdb", "drivers": "sdc"},
		Empty: map[string]string{"installer": "sdb"}}
	if d := cmp.Diff(want, handler.RunningDomainOf(doc)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// A domain that can grow (maxSockets, maxGuest) reports the vCPUs online
// as its sockets, and its memory as the boot memory and what its
// virtio-mem device asks for; the status keeps the memory the guest
// booted with.
func TestRunningDomainThatCanGrow(t *testing.T) {
	doc := &libvirtxml.Domain{
		VCPU:          &libvirtxml.DomainVCPU{Value: 4, Current: 2},
		CPU:           &libvirtxml.DomainCPU{Topology: &libvirtxml.DomainCPUTopology{Sockets: 4, Cores: 1, Threads: 1}},
		Memory:        &libvirtxml.DomainMemory{Value: 512 << 10, Unit: "KiB"},
		CurrentMemory: &libvirtxml.DomainCurrentMemory{Value: 512 << 10, Unit: "KiB"},
		Devices: &libvirtxml.DomainDeviceList{Memorydevs: []libvirtxml.DomainMemorydev{{Model: "virtio-mem", Target: &libvirtxml.DomainMemorydevTarget{
			Size:      &libvirtxml.DomainMemorydevTargetSize{Value: 384 << 10, Unit: "KiB"},
			Requested: &libvirtxml.DomainMemorydevTargetRequested{Value: 128 << 10, Unit: "KiB"},
		}}}},
	}
	want := handler.RunningDomain{Topology: &virtv1.CPUTopology{Sockets: 2, Cores: 1, Threads: 1}, VCPUs: 2, MaxVCPUs: 4,
		MemoryBytes: 256 << 20, BootMemoryBytes: 128 << 20, PluggableBytes: 384 << 20, PluggedBytes: 128 << 20}
	rd := handler.RunningDomainOf(doc)
	if d := cmp.Diff(want, rd); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}

	guest := resource.MustParse("256Mi")
	boot := resource.MustParse("128Mi")
	vmi := &virtv1.VirtualMachineInstance{
		Spec:   virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{Memory: &virtv1.Memory{Guest: &guest}}},
		Status: virtv1.VirtualMachineInstanceStatus{Memory: &virtv1.MemoryStatus{GuestAtBoot: &boot}},
	}
	st := handler.Status(vmi, handler.Facts{Domain: &domain.DomainState{State: domain.StateRunning, Reason: domain.ReasonRunningBooted}, Running: rd}, time.Unix(0, 0))
	m := st.Memory
	if m == nil || m.GuestAtBoot.Cmp(boot) != 0 || m.GuestRequested.Cmp(guest) != 0 || m.GuestCurrent.Cmp(guest) != 0 {
		t.Errorf("status.memory %+v, want 128Mi at boot, 256Mi requested and current", m)
	}
	if top := st.CurrentCPUTopology; top == nil || top.Sockets != 2 {
		t.Errorf("status.currentCPUTopology %+v, want 2 sockets", top)
	}
}

// PlanResize hot-plugs what the spec asks for beyond the running domain,
// within what the launcher pod was sized for, and never while a migration
// runs.
func TestPlanResize(t *testing.T) {
	mi := func(n int64) *resource.Quantity { return resource.NewQuantity(n<<20, resource.BinarySI) }
	rd := handler.RunningDomain{VCPUs: 1, MaxVCPUs: 4, BootMemoryBytes: 128 << 20, PluggableBytes: 384 << 20}
	vmi := func(sockets uint32, guest int64) *virtv1.VirtualMachineInstance {
		return &virtv1.VirtualMachineInstance{
			Spec: virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{
				CPU:    &virtv1.CPU{Sockets: sockets, Cores: 1, Threads: 1, MaxSockets: 4},
				Memory: &virtv1.Memory{Guest: mi(guest), MaxGuest: mi(512)},
			}},
			Status: virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Running},
		}
	}
	plug := func(n int64) *int64 { b := n << 20; return &b }
	big := handler.Sized{VCPUs: 4, Memory: 512 << 20}
	for _, tc := range []struct {
		name  string
		vmi   *virtv1.VirtualMachineInstance
		sized handler.Sized
		want  handler.Resize
	}{
		{"as booted", vmi(1, 128), big, handler.Resize{}},
		{"more of both", vmi(2, 256), big, handler.Resize{VCPUs: 2, Plug: plug(128)}},
		{"a pod sized for the boot", vmi(2, 256), handler.Sized{VCPUs: 1, Memory: 128 << 20}, handler.Resize{}},
		{"past the domain's room", vmi(5, 128), handler.Sized{VCPUs: 8, Memory: 512 << 20}, handler.Resize{}},
		{"migrating", func() *virtv1.VirtualMachineInstance {
			v := vmi(2, 256)
			v.Status.MigrationState = &virtv1.VirtualMachineInstanceMigrationState{}
			return v
		}(), big, handler.Resize{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, handler.PlanResize(tc.vmi, rd, tc.sized)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// The backend-storage claim the VMI controller names in the volume status
// stays there, as in KubeVirt, though no disk uses it.
func TestStatusKeepsBackendStorage(t *testing.T) {
	v := scheduledVMI("vm1")
	state := virtv1.VolumeStatus{Name: "persistent-state-for-this-vm", PersistentVolumeClaimInfo: &virtv1.PersistentVolumeClaimInfo{ClaimName: "persistent-state-for-vm1-x7k2p"}}
	v.Status.VolumeStatus = append(v.Status.VolumeStatus, state)
	st := handler.Status(v, handler.Facts{Domain: running(domain.StateRunning, domain.ReasonRunningBooted)}, t0)
	if !slices.ContainsFunc(st.VolumeStatus, func(vs virtv1.VolumeStatus) bool { return cmp.Equal(vs, state) }) {
		t.Errorf("volume status %+v, want it to keep %+v", st.VolumeStatus, state)
	}
}
