package metrics_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/metrics"
)

func vmi(ns, name, node string, phase virtv1.VirtualMachineInstancePhase, annotations map[string]string) *virtv1.VirtualMachineInstance {
	return &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Status: virtv1.VirtualMachineInstanceStatus{NodeName: node, Phase: phase}}
}

func reader(objs ...client.Object) client.Reader {
	return fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build()
}

// VMIs are counted per node, phase (lower case, as KubeVirt) and template
// annotations, and each has an info series.
func TestVMIStats(t *testing.T) {
	fedora := map[string]string{"vm.kubevirt.io/os": "fedora", "vm.kubevirt.io/workload": "server", "vm.kubevirt.io/flavor": "small"}
	typed := map[string]string{virtv1.InstancetypeAnnotation: "u1.small", virtv1.ClusterPreferenceAnnotation: "fedora"}
	running := vmi("ns", "c", "node-1", virtv1.Running, typed)
	running.Status.GuestOSInfo = virtv1.VirtualMachineInstanceGuestOSInfo{Name: "Fedora Linux", VersionID: "41", KernelRelease: "6.11", Machine: "x86_64"}
	running.Status.Machine = &virtv1.Machine{Type: "pc-q35-9.1"}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewVMIStats(reader(
		vmi("ns", "a", "node-1", virtv1.Running, fedora),
		vmi("ns", "b", "node-1", virtv1.Running, fedora),
		running,
		vmi("other", "d", "", virtv1.Pending, nil),
	)))
	want := `
# HELP kubevirt_vmi_phase_count VMI phase.
# TYPE kubevirt_vmi_phase_count gauge
kubevirt_vmi_phase_count{flavor="<none>",instance_type="<none>",node="",os="<none>",phase="pending",preference="<none>",workload="<none>"} 1
kubevirt_vmi_phase_count{flavor="<none>",instance_type="<other>",node="node-1",os="<none>",phase="running",preference="<other>",workload="<none>"} 1
kubevirt_vmi_phase_count{flavor="small",instance_type="<none>",node="node-1",os="fedora",phase="running",preference="<none>",workload="server"} 2
# HELP kubevirt_vmi_info Information about VirtualMachineInstances.
# TYPE kubevirt_vmi_info gauge
kubevirt_vmi_info{flavor="",guest_os_arch="",guest_os_kernel_release="",guest_os_machine="",guest_os_name="",guest_os_version_id="",instance_type="",name="d",namespace="other",node="",os="",phase="pending",preference="",workload=""} 1
kubevirt_vmi_info{flavor="",guest_os_arch="x86_64",guest_os_kernel_release="6.11",guest_os_machine="pc-q35-9.1",guest_os_name="Fedora Linux",guest_os_version_id="41",instance_type="<other>",name="c",namespace="ns",node="node-1",os="",phase="running",preference="<other>",workload=""} 1
kubevirt_vmi_info{flavor="small",guest_os_arch="",guest_os_kernel_release="",guest_os_machine="",guest_os_name="",guest_os_version_id="",instance_type="",name="a",namespace="ns",node="node-1",os="fedora",phase="running",preference="",workload="server"} 1
kubevirt_vmi_info{flavor="small",guest_os_arch="",guest_os_kernel_release="",guest_os_machine="",guest_os_name="",guest_os_version_id="",instance_type="",name="b",namespace="ns",node="node-1",os="fedora",phase="running",preference="",workload="server"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kubevirt_vmi_phase_count", "kubevirt_vmi_info"); err != nil {
		t.Error(err)
	}
}

// Migrations in progress are counted per phase (zeros included); ended
// ones each have a series saying how they ended.
func TestMigrationStats(t *testing.T) {
	mig := func(name string, phase virtv1.VirtualMachineInstanceMigrationPhase) *virtv1.VirtualMachineInstanceMigration {
		return &virtv1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec: virtv1.VirtualMachineInstanceMigrationSpec{VMIName: "vm-" + name}, Status: virtv1.VirtualMachineInstanceMigrationStatus{Phase: phase}}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewMigrationStats(reader(
		mig("new", virtv1.MigrationPhaseUnset), mig("p", virtv1.MigrationPending),
		mig("r1", virtv1.MigrationRunning), mig("r2", virtv1.MigrationTargetReady), mig("r3", virtv1.MigrationScheduled),
		mig("ok", virtv1.MigrationSucceeded), mig("bad", virtv1.MigrationFailed),
	)))
	want := `
# HELP kubevirt_vmi_migrations_in_pending_phase Number of current pending migrations.
# TYPE kubevirt_vmi_migrations_in_pending_phase gauge
kubevirt_vmi_migrations_in_pending_phase 1
# HELP kubevirt_vmi_migrations_in_running_phase Number of current running migrations.
# TYPE kubevirt_vmi_migrations_in_running_phase gauge
kubevirt_vmi_migrations_in_running_phase 3
# HELP kubevirt_vmi_migrations_in_scheduling_phase Number of current scheduling migrations.
# TYPE kubevirt_vmi_migrations_in_scheduling_phase gauge
kubevirt_vmi_migrations_in_scheduling_phase 0
# HELP kubevirt_vmi_migrations_in_unset_phase Number of current unset migrations.
# TYPE kubevirt_vmi_migrations_in_unset_phase gauge
kubevirt_vmi_migrations_in_unset_phase 1
# HELP kubevirt_vmi_migration_succeeded Indicates if the VMI migration succeeded.
# TYPE kubevirt_vmi_migration_succeeded gauge
kubevirt_vmi_migration_succeeded{namespace="ns",vmi="vm-ok",vmim="ok"} 1
# HELP kubevirt_vmi_migration_failed Indicates if the VMI migration failed.
# TYPE kubevirt_vmi_migration_failed gauge
kubevirt_vmi_migration_failed{namespace="ns",vmi="vm-bad",vmim="bad"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func TestVMStats(t *testing.T) {
	vm := func(ns, name string) *virtv1.VirtualMachine {
		return &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewVMStats(reader(vm("a", "1"), vm("a", "2"), vm("b", "1"))))
	want := `
# HELP kubevirt_number_of_vms The number of VMs in the cluster by namespace.
# TYPE kubevirt_number_of_vms gauge
kubevirt_number_of_vms{namespace="a"} 2
kubevirt_number_of_vms{namespace="b"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// A list that fails leaves the series out; the scrape itself does not fail.
func TestClusterStatsListFailure(t *testing.T) {
	failing := fake.NewClientBuilder().WithScheme(scheme.New()).WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("cache not synced")
		},
	}).Build()
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewVMIStats(failing), metrics.NewMigrationStats(failing), metrics.NewVMStats(failing))
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 0 {
		t.Errorf("gather: %d families, %v; want none and no error", len(mfs), err)
	}
}

// The outdated count is the installed CR's, 0 while none is counted.
func TestOutdated(t *testing.T) {
	three := 3
	for _, tc := range []struct {
		name string
		objs []client.Object
		want string
	}{
		{"no CR", nil, "0"},
		{"not counted yet", []client.Object{&virtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt"}}}, "0"},
		{"counted", []client.Object{&virtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt"},
			Status: virtv1.KubeVirtStatus{OutdatedVirtualMachineInstanceWorkloads: &three}}}, "3"},
	} {
		reg := prometheus.NewRegistry()
		reg.MustRegister(metrics.NewOutdated(reader(tc.objs...)))
		want := "# HELP kubevirt_vmi_number_of_outdated Indication for the total number of VirtualMachineInstance workloads that are not running within the most up-to-date version of the virt-launcher environment.\n" +
			"# TYPE kubevirt_vmi_number_of_outdated gauge\nkubevirt_vmi_number_of_outdated " + tc.want + "\n"
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), metrics.OutdatedName); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// A VMI set to live migrate on eviction (its own strategy, or the KubeVirt
// CR's) is non-evictable until it is known to be migratable.
func TestVMIStatsNonEvictable(t *testing.T) {
	live := virtv1.EvictionStrategyLiveMigrate
	none := virtv1.EvictionStrategyNone
	own := vmi("ns", "own", "node-1", virtv1.Running, nil)
	own.Spec.EvictionStrategy = &live
	migratable := vmi("ns", "migratable", "node-1", virtv1.Running, nil)
	migratable.Status.Conditions = []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstanceIsMigratable, Status: "True"}}
	blocked := vmi("ns", "blocked", "node-1", virtv1.Running, nil)
	blocked.Status.Conditions = []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstanceIsMigratable, Status: "False"}}
	optedOut := vmi("ns", "opted-out", "node-1", virtv1.Running, nil)
	optedOut.Spec.EvictionStrategy = &none
	kv := &virtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt"},
		Spec: virtv1.KubeVirtSpec{Configuration: virtv1.KubeVirtConfiguration{EvictionStrategy: &live}}}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewVMIStats(reader(own, migratable, blocked, optedOut, kv)))
	want := `
# HELP kubevirt_vmi_non_evictable Indication for a VirtualMachine that its eviction strategy is set to Live Migration but is not migratable.
# TYPE kubevirt_vmi_non_evictable gauge
kubevirt_vmi_non_evictable{name="blocked",namespace="ns",node="node-1"} 1
kubevirt_vmi_non_evictable{name="migratable",namespace="ns",node="node-1"} 0
kubevirt_vmi_non_evictable{name="opted-out",namespace="ns",node="node-1"} 0
kubevirt_vmi_non_evictable{name="own",namespace="ns",node="node-1"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), metrics.NonEvictableName); err != nil {
		t.Error(err)
	}
}

// TestStorageProfiles: one info series per StorageProfile, labelled as
// CDI's.
func TestStorageProfiles(t *testing.T) {
	rwx, fs := corev1.ReadWriteMany, corev1.PersistentVolumeFilesystem
	r := reader(
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local", Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}}, Provisioner: "virtkit.io/local-folder"},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Provisioner: "example.com/nfs"},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "ceph"}, Provisioner: "rbd.csi.ceph.com"},
		&cdiv1.StorageProfile{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Status: cdiv1.StorageProfileStatus{StorageClass: new("local"), Provisioner: new("virtkit.io/local-folder"),
			CloneStrategy:     new(cdiv1.CloneStrategyCsiClone),
			ClaimPropertySets: []cdiv1.ClaimPropertySet{{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeMode: &fs}}}},
		&cdiv1.StorageProfile{ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Status: cdiv1.StorageProfileStatus{StorageClass: new("shared"), Provisioner: new("example.com/nfs"),
			CloneStrategy:     new(cdiv1.CloneStrategyHostAssisted),
			ClaimPropertySets: []cdiv1.ClaimPropertySet{{AccessModes: []corev1.PersistentVolumeAccessMode{rwx}, VolumeMode: &fs}}}},
		&cdiv1.StorageProfile{ObjectMeta: metav1.ObjectMeta{Name: "ceph"}, Status: cdiv1.StorageProfileStatus{StorageClass: new("ceph"), Provisioner: new("rbd.csi.ceph.com"),
			CloneStrategy: new(cdiv1.CloneStrategySnapshot), SnapshotClass: new("ceph-snapshots"),
			ClaimPropertySets: []cdiv1.ClaimPropertySet{{AccessModes: []corev1.PersistentVolumeAccessMode{rwx}, VolumeMode: &fs}}}},
		&cdiv1.StorageProfile{ObjectMeta: metav1.ObjectMeta{Name: "new"}},
	)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewStorageProfiles(r))
	want := `
# HELP kubevirt_cdi_storageprofile_info ` + "`StorageProfiles` info labels: `storageclass`, `provisioner`, `complete` indicates if all storage profiles recommended PVC settings are complete, `default` indicates if it's the Kubernetes default storage class, `virtdefault` indicates if it's the default virtualization storage class, `rwx` indicates if the storage class supports `ReadWriteMany`, `smartclone` indicates if it supports snapshot or CSI based clone, `degraded` indicates it is not optimal for virtualization" + `
# TYPE kubevirt_cdi_storageprofile_info gauge
kubevirt_cdi_storageprofile_info{complete="true",default="true",degraded="true",provisioner="virtkit.io/local-folder",rwx="false",smartclone="true",storageclass="local",virtdefault="false"} 1
kubevirt_cdi_storageprofile_info{complete="true",default="false",degraded="true",provisioner="example.com/nfs",rwx="true",smartclone="false",storageclass="shared",virtdefault="false"} 1
kubevirt_cdi_storageprofile_info{complete="true",default="false",degraded="false",provisioner="rbd.csi.ceph.com",rwx="true",smartclone="true",storageclass="ceph",virtdefault="false"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func TestSmartClone(t *testing.T) {
	for _, tc := range []struct {
		strategy      *cdiv1.CDICloneStrategy
		snapshotClass *string
		want          bool
	}{
		{new(cdiv1.CloneStrategyHostAssisted), new("snaps"), false},
		{new(cdiv1.CloneStrategyCsiClone), nil, true},
		{new(cdiv1.CloneStrategySnapshot), new("snaps"), true},
		{new(cdiv1.CloneStrategySnapshot), nil, false},
		{nil, new("snaps"), true},
		{nil, nil, false},
	} {
		st := cdiv1.StorageProfileStatus{CloneStrategy: tc.strategy, SnapshotClass: tc.snapshotClass}
		if got := metrics.SmartClone(st); got != tc.want {
			t.Errorf("SmartClone(strategy %v, snapshot class %v) = %v, want %v", ptr.Deref(tc.strategy, "none"), ptr.Deref(tc.snapshotClass, "none"), got, tc.want)
		}
	}
}

// TestDataVolumesPending: DataVolumes naming no StorageClass count while
// they have no phase or are Pending; the gauge is sent at 0 too.
func TestDataVolumesPending(t *testing.T) {
	dv := func(name string, phase cdiv1.DataVolumePhase, pvcClass, storageClass *string) *cdiv1.DataVolume {
		d := &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Status: cdiv1.DataVolumeStatus{Phase: phase}}
		if pvcClass != nil {
			d.Spec.PVC = &corev1.PersistentVolumeClaimSpec{StorageClassName: pvcClass}
		} else {
			d.Spec.Storage = &cdiv1.StorageSpec{StorageClassName: storageClass}
		}
		return d
	}
	want := func(n string) string {
		return "\n# HELP kubevirt_cdi_datavolume_pending Number of DataVolumes pending for default storage class to be configured\n" +
			"# TYPE kubevirt_cdi_datavolume_pending gauge\nkubevirt_cdi_datavolume_pending " + n + "\n"
	}
	for _, tc := range []struct {
		name string
		objs []client.Object
		want string
	}{
		{"none", nil, "0"},
		{"mixed", []client.Object{
			dv("new", cdiv1.PhaseUnset, nil, nil),
			dv("pending", cdiv1.Pending, nil, nil),
			dv("importing", cdiv1.ImportInProgress, nil, nil),
			dv("named-class", cdiv1.Pending, nil, new("fast")),
			dv("pvc-named-class", cdiv1.Pending, new("fast"), nil),
		}, "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(metrics.NewDataVolumesPending(reader(tc.objs...)))
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want(tc.want))); err != nil {
				t.Error(err)
			}
		})
	}
}
