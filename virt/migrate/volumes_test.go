package migrate_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/migrate"
)

func claimVolume(name, claim string) virtv1.Volume {
	return virtv1.Volume{Name: name, VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
}

func rwoClaim(name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}}},
		Status: corev1.PersistentVolumeClaimStatus{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}}}
}

func info(name string) *virtv1.PersistentVolumeClaimInfo {
	return &virtv1.PersistentVolumeClaimInfo{ClaimName: name, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")},
		Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}}
}

func TestPlanVolumeUpdate(t *testing.T) {
	migration := virtv1.UpdateVolumesStrategyMigration
	replacement := virtv1.UpdateVolumesStrategyReplacement
	disk := func(name string) virtv1.Disk {
		return virtv1.Disk{Name: name, DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusVirtio}}}
	}
	vmWith := func(strategy *virtv1.UpdateVolumesStrategy, vols ...virtv1.Volume) *virtv1.VirtualMachine {
		return &virtv1.VirtualMachine{Spec: virtv1.VirtualMachineSpec{UpdateVolumesStrategy: strategy,
			Template: &virtv1.VirtualMachineInstanceTemplateSpec{Spec: virtv1.VirtualMachineInstanceSpec{Volumes: vols}}}}
	}
	running := func(vols ...virtv1.Volume) *virtv1.VirtualMachineInstance {
		vmi := &virtv1.VirtualMachineInstance{Spec: virtv1.VirtualMachineInstanceSpec{Volumes: vols}, Status: virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Running}}
		for _, v := range vols {
			vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, disk(v.Name))
			if c := migrate.ClaimOf(&v); c != "" {
				vmi.Status.VolumeStatus = append(vmi.Status.VolumeStatus, virtv1.VolumeStatus{Name: v.Name, PersistentVolumeClaimInfo: info(c)})
			}
		}
		return vmi
	}
	migrating := func(vmi *virtv1.VirtualMachineInstance) *virtv1.VirtualMachineInstance {
		vmi.Status.MigratedVolumes = []virtv1.StorageMigratedVolumeInfo{{VolumeName: "data", SourcePVCInfo: info("old"), DestinationPVCInfo: info("new")}}
		vmi.Status.Conditions = []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstanceVolumesChange, Status: corev1.ConditionTrue}}
		return vmi
	}
	claims := map[string]*corev1.PersistentVolumeClaim{"old": rwoClaim("old"), "new": rwoClaim("new"), "other": rwoClaim("other"), "keep": rwoClaim("keep"),
		"old-copy": func() *corev1.PersistentVolumeClaim {
			c := rwoClaim("old-copy")
			c.Annotations = map[string]string{migrate.CopyOfAnnotation: "old"}
			return c
		}()}
	empty := virtv1.Volume{Name: "scratch", VolumeSource: virtv1.VolumeSource{EmptyDisk: &virtv1.EmptyDiskSource{Capacity: resource.MustParse("1Mi")}}}
	hot := claimVolume("data", "new")
	hot.PersistentVolumeClaim.Hotpluggable = true

	tests := []struct {
		name    string
		vm      *virtv1.VirtualMachine
		vmi     *virtv1.VirtualMachineInstance
		want    migrate.VolumeUpdate
		refused string // the refusal's text
		wantErr string
	}{{
		name: "a new claim under Migration starts a volume migration of that volume alone",
		vm:   vmWith(&migration, claimVolume("data", "new"), empty),
		vmi:  running(claimVolume("data", "old"), empty),
		want: migrate.VolumeUpdate{Start: true,
			Migrated: []virtv1.StorageMigratedVolumeInfo{{VolumeName: "data", SourcePVCInfo: info("old"), DestinationPVCInfo: info("new")}},
			Volumes:  []virtv1.Volume{claimVolume("data", "new"), empty}},
	}, {
		name: "without the Migration strategy nothing happens (Replacement waits for a restart)",
		vm:   vmWith(&replacement, claimVolume("data", "new")),
		vmi:  running(claimVolume("data", "old")),
	}, {
		name: "no strategy is Replacement",
		vm:   vmWith(nil, claimVolume("data", "new")),
		vmi:  running(claimVolume("data", "old")),
	}, {
		name: "the same claims: nothing to do",
		vm:   vmWith(&migration, claimVolume("data", "old")),
		vmi:  running(claimVolume("data", "old")),
	}, {
		name: "a VMI that ended is left alone",
		vm:   vmWith(&migration, claimVolume("data", "new")),
		vmi: func() *virtv1.VirtualMachineInstance {
			v := running(claimVolume("data", "old"))
			v.Status.Phase = virtv1.Failed
			return v
		}(),
	}, {
		name: "a destination claim that does not exist is named",
		vm:   vmWith(&migration, claimVolume("data", "absent")),
		vmi:  running(claimVolume("data", "old")),
		want: migrate.VolumeUpdate{Missing: "absent"},
	}, {
		name:    "a hotplugged volume is refused with its field",
		vm:      vmWith(&migration, hot),
		vmi:     running(claimVolume("data", "old")),
		refused: "spec.template.spec.volumes[0]: Forbidden: a hotplugged volume cannot be migrated to another claim",
	}, {
		name:    "a ReadWriteOnce claim left behind is refused",
		vm:      vmWith(&migration, claimVolume("data", "new"), claimVolume("keep", "keep")),
		vmi:     running(claimVolume("data", "old"), claimVolume("keep", "keep")),
		refused: "spec.template.spec.volumes: Forbidden: cannot migrate the VM: the volume keep is ReadWriteOnce and not included in the migrated volumes",
	}, {
		name: "a VMI not migratable for another reason is refused",
		vm:   vmWith(&migration, claimVolume("data", "new")),
		vmi: func() *virtv1.VirtualMachineInstance {
			v := running(claimVolume("data", "old"))
			v.Status.Conditions = []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionFalse,
				Reason: virtv1.VirtualMachineInstanceReasonInterfaceNotMigratable, Message: "bridge"}}
			return v
		}(),
		refused: "spec.template.spec.volumes: Forbidden: cannot migrate the volumes as the VMI isn't migratable: InterfaceNotLiveMigratable: bridge",
	}, {
		name: "while migrating, the VM back on the source claim cancels",
		vm:   vmWith(&migration, claimVolume("data", "old")),
		vmi:  migrating(running(claimVolume("data", "new"))),
		want: migrate.VolumeUpdate{Cancel: true, Volumes: []virtv1.Volume{claimVolume("data", "old")}},
	}, {
		name:    "while migrating, a third claim is an error",
		vm:      vmWith(&migration, claimVolume("data", "other")),
		vmi:     migrating(running(claimVolume("data", "new"))),
		wantErr: migrate.InvalidVolumeRevert,
	}, {
		name: "listed and renamed but not asked for (the controller stopped between its writes): asked for",
		vm:   vmWith(&migration, claimVolume("data", "new")),
		vmi: func() *virtv1.VirtualMachineInstance {
			v := migrating(running(claimVolume("data", "new")))
			v.Status.Conditions = nil
			return v
		}(),
		want: migrate.VolumeUpdate{Start: true,
			Migrated: []virtv1.StorageMigratedVolumeInfo{{VolumeName: "data", SourcePVCInfo: info("old"), DestinationPVCInfo: info("new")}},
			Volumes:  []virtv1.Volume{claimVolume("data", "new")}},
	}, {
		name: "a migration copying the claim moved the VMI to its copy: not the VM's change",
		vm:   vmWith(&migration, claimVolume("data", "old")),
		vmi:  running(claimVolume("data", "old-copy")),
	}, {
		name: "while migrating, the VM as the VMI: nothing to do",
		vm:   vmWith(&migration, claimVolume("data", "new")),
		vmi:  migrating(running(claimVolume("data", "new"))),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := migrate.PlanVolumeUpdate(tt.vm, tt.vmi, claims)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			refused := ""
			if agg := got.Refused.ToAggregate(); agg != nil {
				refused = agg.Error()
			}
			got.Refused = nil
			if refused != tt.refused {
				t.Errorf("refused: %q, want %q", refused, tt.refused)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChangedClaims(t *testing.T) {
	dv := virtv1.Volume{Name: "dv", VolumeSource: virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: "dv-new"}}}
	got := migrate.ChangedClaims(
		[]virtv1.Volume{claimVolume("a", "a2"), claimVolume("b", "b"), dv, claimVolume("added", "x")},
		[]virtv1.Volume{claimVolume("a", "a1"), claimVolume("b", "b"), {Name: "dv", VolumeSource: virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: "dv-old"}}}})
	if diff := cmp.Diff(map[string]string{"a": "a2", "dv": "dv-new"}, got); diff != "" {
		t.Errorf("ChangedClaims (-want +got):\n%s", diff)
	}
}

func TestClaimsToCopy(t *testing.T) {
	shared := true
	rwx := func(name, claim string) virtv1.VolumeStatus {
		return virtv1.VolumeStatus{Name: name, PersistentVolumeClaimInfo: &virtv1.PersistentVolumeClaimInfo{ClaimName: claim,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}}}
	}
	rwo := func(name, claim string) virtv1.VolumeStatus {
		return virtv1.VolumeStatus{Name: name, PersistentVolumeClaimInfo: info(claim)}
	}
	dv := virtv1.Volume{Name: "dv", VolumeSource: virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: "dv"}}}
	host := virtv1.Volume{Name: "host", VolumeSource: virtv1.VolumeSource{HostDisk: &virtv1.HostDisk{Path: "/h/disk.img"}}}
	hot := claimVolume("hot", "hot")
	hot.PersistentVolumeClaim.Hotpluggable = true
	sharedHost := virtv1.Volume{Name: "host", VolumeSource: virtv1.VolumeSource{HostDisk: &virtv1.HostDisk{Path: "/h/disk.img", Shared: &shared}}}
	tests := []struct {
		name   string
		vols   []virtv1.Volume
		status []virtv1.VolumeStatus
		want   []string
		ok     bool
	}{
		{"the ReadWriteOnce claims", []virtv1.Volume{claimVolume("a", "a"), claimVolume("b", "b"), claimVolume("c", "c"), sharedHost},
			[]virtv1.VolumeStatus{rwo("a", "a"), rwx("b", "b"), rwo("c", "c")}, []string{"a", "c"}, true},
		{"only shared claims: nothing to copy", []virtv1.Volume{claimVolume("b", "b")}, []virtv1.VolumeStatus{rwx("b", "b")}, nil, false},
		{"a hostDisk that is not shared stays", []virtv1.Volume{claimVolume("a", "a"), host}, []virtv1.VolumeStatus{rwo("a", "a")}, nil, false},
		{"a DataVolume is not copied", []virtv1.Volume{claimVolume("a", "a"), dv}, []virtv1.VolumeStatus{rwo("a", "a"), rwo("dv", "dv")}, nil, false},
		{"access modes not reported yet", []virtv1.Volume{claimVolume("a", "a")}, nil, nil, false},
		{"a hotplugged claim is not copied", []virtv1.Volume{claimVolume("a", "a"), hot}, []virtv1.VolumeStatus{rwo("a", "a"), rwo("hot", "hot")}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vmi := &virtv1.VirtualMachineInstance{Spec: virtv1.VirtualMachineInstanceSpec{Volumes: tt.vols}, Status: virtv1.VirtualMachineInstanceStatus{VolumeStatus: tt.status}}
			got, ok := migrate.ClaimsToCopy(vmi)
			if ok != tt.ok || !cmp.Equal(got, tt.want, cmpopts.EquateEmpty()) {
				t.Errorf("ClaimsToCopy = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestCopyClaim(t *testing.T) {
	src := rwoClaim("data")
	src.Namespace = "ns"
	class := "local"
	src.Spec.StorageClassName = &class
	mig := &virtv1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns", UID: "0123abcd-4567-89ef"}}
	got := migrate.CopyClaim(src, mig)
	if got.Name != "data-0123abcd" || got.Namespace != "ns" || got.Labels[migrate.CopyForLabel] != string(mig.UID) ||
		got.Annotations[migrate.CopyOfAnnotation] != "data" || len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != mig.UID {
		t.Errorf("copy's metadata: %+v", got.ObjectMeta)
	}
	if diff := cmp.Diff(corev1.PersistentVolumeClaimSpec{AccessModes: src.Spec.AccessModes, StorageClassName: &class,
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}}}, got.Spec); diff != "" {
		t.Errorf("copy's spec (-want +got):\n%s", diff)
	}
	long := migrate.CopyName(strings.Repeat("x", 260), string(mig.UID))
	if len(long) != 253 || !strings.HasSuffix(long, "-0123abcd") {
		t.Errorf("CopyName of a long claim: %d characters, %q", len(long), long[240:])
	}
}
