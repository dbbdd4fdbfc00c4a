package snapshot_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	virtv1 "kubevirt.io/api/core/v1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"

	"github.com/virtkit/virtkit/virt/storage/backendstorage"
	"github.com/virtkit/virtkit/virt/storage/dvspec"
	"github.com/virtkit/virtkit/virt/storage/snapshot"
)

func claim(name, class string, phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
		Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes", "team": "a"}},
		Spec:   corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(class), VolumeName: "pv-" + name, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
}

func facts(claims ...*corev1.PersistentVolumeClaim) snapshot.Facts {
	f := snapshot.Facts{Claims: map[string]*corev1.PersistentVolumeClaim{},
		StorageClasses: map[string]*storagev1.StorageClass{
			"local": {ObjectMeta: metav1.ObjectMeta{Name: "local"}, Provisioner: "local.csi.virtkit.io"},
			"nfs":   {ObjectMeta: metav1.ObjectMeta{Name: "nfs"}, Provisioner: "nfs.example.com"},
			"twice": {ObjectMeta: metav1.ObjectMeta{Name: "twice"}, Provisioner: "twice.example.com"},
		},
		SnapshotClasses: []volumesnapshotv1.VolumeSnapshotClass{
			{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Driver: "local.csi.virtkit.io"},
			{ObjectMeta: metav1.ObjectMeta{Name: "twice-a"}, Driver: "twice.example.com"},
			{ObjectMeta: metav1.ObjectMeta{Name: "twice-b"}, Driver: "twice.example.com"},
		}}
	for _, c := range claims {
		f.Claims[c.Name] = c
	}
	return f
}

func vmWith(volumes ...virtv1.Volume) *virtv1.VirtualMachine {
	return &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns", UID: "vm-uid"},
		Spec: virtv1.VirtualMachineSpec{RunStrategy: ptr.To(virtv1.RunStrategyAlways),
			Template: &virtv1.VirtualMachineInstanceTemplateSpec{Spec: virtv1.VirtualMachineInstanceSpec{Volumes: volumes}}}}
}

var (
	pvcVol = virtv1.Volume{Name: "data", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-claim"}}}}
	dvVol    = virtv1.Volume{Name: "root", VolumeSource: virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: "root-dv"}}}
	cdVol    = virtv1.Volume{Name: "cd", VolumeSource: virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "img"}}}
	cloudVol = virtv1.Volume{Name: "ci", VolumeSource: virtv1.VolumeSource{CloudInitNoCloud: &virtv1.CloudInitNoCloudSource{UserData: "x"}}}
)

func TestPlanVolumes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		vm      *virtv1.VirtualMachine
		f       snapshot.Facts
		want    snapshot.Plan
		wantErr string
		notYet  bool
	}{{
		name: "claims copied, the rest named as left out",
		vm:   vmWith(cdVol, pvcVol, dvVol, cloudVol),
		f:    facts(claim("data-claim", "local", corev1.ClaimBound), claim("root-dv", "local", corev1.ClaimBound)),
		want: snapshot.Plan{
			Included: []snapshot.Volume{{Name: "data", Claim: "data-claim", SnapshotClass: "local"}, {Name: "root", Claim: "root-dv", SnapshotClass: "local"}},
			Excluded: []snapshot.Excluded{{Name: "cd", Reason: "a containerDisk volume holds no claim: it is not snapshotted"},
				{Name: "ci", Reason: "a cloudInitNoCloud volume holds no claim: it is not snapshotted"}},
		},
	}, {
		name:    "a class without snapshots fails naming the volume and the claim",
		vm:      vmWith(cdVol, pvcVol),
		f:       facts(claim("data-claim", "nfs", corev1.ClaimBound)),
		wantErr: `spec.template.spec.volumes[1]: Invalid value: "data": claim "data-claim": no VolumeSnapshotClass for StorageClass "nfs" (driver nfs.example.com)`,
	}, {
		name:    "two classes and no default",
		vm:      vmWith(pvcVol),
		f:       facts(claim("data-claim", "twice", corev1.ClaimBound)),
		wantErr: `2 VolumeSnapshotClasses for StorageClass "twice"`,
	}, {
		name:    "an unbound claim is waited for",
		vm:      vmWith(pvcVol),
		f:       facts(claim("data-claim", "local", corev1.ClaimPending)),
		wantErr: `volume "data": claim "data-claim" is not bound (Pending)`,
		notYet:  true,
	}, {
		name:    "a missing claim is waited for",
		vm:      vmWith(pvcVol),
		f:       facts(),
		wantErr: `claim "data-claim" does not exist`,
		notYet:  true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := snapshot.PlanVolumes(tc.vm, tc.f)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if errors.Is(err, snapshot.ErrNotReady) != tc.notYet {
					t.Errorf("errors.Is(err, ErrNotReady) = %t, want %t", !tc.notYet, tc.notYet)
				}
				var fe *field.Error
				if !tc.notYet && !errors.As(err, &fe) {
					t.Errorf("err %T is not a *field.Error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSnapshotClassForPicksTheDefault(t *testing.T) {
	f := facts()
	f.SnapshotClasses[2].Annotations = map[string]string{"snapshot.storage.kubernetes.io/is-default-class": "true"}
	if got, err := snapshot.SnapshotClassFor("twice", f); err != nil || got != "twice-b" {
		t.Errorf("SnapshotClassFor = %q, %v; want the default twice-b", got, err)
	}
}

func snapshotOf(vm *virtv1.VirtualMachine) *vmsnapshotv1.VirtualMachineSnapshot {
	return &vmsnapshotv1.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "snap", Namespace: "ns", UID: "snap-uid"},
		Spec: vmsnapshotv1.VirtualMachineSnapshotSpec{Source: corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: vm.Name}}}
}

func TestContentAndVolumeSnapshot(t *testing.T) {
	vm := vmWith(cdVol, pvcVol)
	vm.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	f := facts(claim("data-claim", "local", corev1.ClaimBound))
	plan, err := snapshot.PlanVolumes(vm, f)
	if err != nil {
		t.Fatal(err)
	}
	c := snapshot.Content(snapshotOf(vm), vm, plan, f.Claims)
	if c.Name != "vmsnapshot-content-snap-uid" || *c.Spec.VirtualMachineSnapshotName != "snap" || c.Finalizers[0] != snapshot.ContentFinalizer {
		t.Errorf("content %s for %v, finalizers %v", c.Name, c.Spec.VirtualMachineSnapshotName, c.Finalizers)
	}
	if src := c.Spec.Source.VirtualMachine; src == nil || src.Name != "vm" || src.ManagedFields != nil || len(src.Spec.Template.Spec.Volumes) != 2 {
		t.Errorf("source VM %+v", src)
	}
	if len(c.Spec.VolumeBackups) != 1 || c.Spec.VolumeBackups[0].PersistentVolumeClaim.Name != "data-claim" ||
		*c.Spec.VolumeBackups[0].VolumeSnapshotName != "vmsnapshot-snap-uid-volume-data" {
		t.Fatalf("backups %+v", c.Spec.VolumeBackups)
	}
	c.UID = "content-uid"
	vs := snapshot.VolumeSnapshot(c, c.Spec.VolumeBackups[0], "local")
	want := volumesnapshotv1.VolumeSnapshotSpec{Source: volumesnapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("data-claim")},
		VolumeSnapshotClassName: ptr.To("local")}
	if diff := cmp.Diff(want, vs.Spec); diff != "" {
		t.Errorf("VolumeSnapshot spec (-want +got):\n%s", diff)
	}
	if vs.Labels[snapshot.SourceNameLabel] != "vm" || vs.OwnerReferences[0].UID != "content-uid" || vs.Name != "vmsnapshot-snap-uid-volume-data" {
		t.Errorf("VolumeSnapshot %s labels %v owners %v", vs.Name, vs.Labels, vs.OwnerReferences)
	}
}

func contentFor(t *testing.T, vm *virtv1.VirtualMachine, claims ...*corev1.PersistentVolumeClaim) *vmsnapshotv1.VirtualMachineSnapshotContent {
	t.Helper()
	f := facts(claims...)
	plan, err := snapshot.PlanVolumes(vm, f)
	if err != nil {
		t.Fatal(err)
	}
	return snapshot.Content(snapshotOf(vm), vm, plan, f.Claims)
}

func TestPlanRestoreOntoItsVM(t *testing.T) {
	vm := vmWith(cdVol, pvcVol, dvVol)
	vm.Spec.DataVolumeTemplates = []virtv1.DataVolumeTemplateSpec{{ObjectMeta: metav1.ObjectMeta{Name: "root-dv"}}, {ObjectMeta: metav1.ObjectMeta{Name: "other"}}}
	content := contentFor(t, vm, claim("data-claim", "local", corev1.ClaimBound), claim("root-dv", "local", corev1.ClaimBound))
	// Since the snapshot, the VM was halted and its data disk swapped.
	now := vm.DeepCopy()
	now.Spec.RunStrategy = ptr.To(virtv1.RunStrategyHalted)
	now.Spec.Template.Spec.Volumes[1].PersistentVolumeClaim.ClaimName = "elsewhere"
	r := &vmsnapshotv1.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "ns", UID: "r-uid"},
		Spec: vmsnapshotv1.VirtualMachineRestoreSpec{Target: corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "vm"},
			VirtualMachineSnapshotName: "snap",
			VolumeRestoreOverrides:     []vmsnapshotv1.VolumeRestoreOverride{{VolumeName: "root", RestoreName: "root-again", Labels: map[string]string{"restored": "yes"}}}}}
	p, err := snapshot.PlanRestore(r, content, now)
	if err != nil {
		t.Fatal(err)
	}
	want := []vmsnapshotv1.VolumeRestore{
		{VolumeName: "data", PersistentVolumeClaimName: "restore-r-uid-data", VolumeSnapshotName: "vmsnapshot-snap-uid-volume-data"},
		{VolumeName: "root", PersistentVolumeClaimName: "root-again", VolumeSnapshotName: "vmsnapshot-snap-uid-volume-root"},
	}
	if diff := cmp.Diff(want, p.Restores); diff != "" {
		t.Errorf("restores (-want +got):\n%s", diff)
	}
	c := p.Claims[0]
	if c.Spec.VolumeName != "" || c.Spec.DataSource == nil || c.Spec.DataSource.Kind != "VolumeSnapshot" || c.Spec.DataSource.Name != "vmsnapshot-snap-uid-volume-data" ||
		c.Annotations["pv.kubernetes.io/bind-completed"] != "" || c.Annotations["team"] != "a" || c.Annotations[snapshot.RestoreNameAnnotation] != "back" {
		t.Errorf("restored claim %+v %+v", c.ObjectMeta, c.Spec)
	}
	if p.Claims[1].Labels["restored"] != "yes" {
		t.Errorf("override labels: %v", p.Claims[1].Labels)
	}
	got := p.VM
	if *got.Spec.RunStrategy != virtv1.RunStrategyHalted || got.Annotations[snapshot.LastRestoreAnnotation] != "r-uid" {
		t.Errorf("restored VM: run strategy %v, annotations %v", *got.Spec.RunStrategy, got.Annotations)
	}
	vols := got.Spec.Template.Spec.Volumes
	if vols[1].PersistentVolumeClaim.ClaimName != "restore-r-uid-data" || vols[2].PersistentVolumeClaim == nil || vols[2].PersistentVolumeClaim.ClaimName != "root-again" || vols[0].ContainerDisk == nil {
		t.Errorf("restored volumes %+v", vols)
	}
	if len(got.Spec.DataVolumeTemplates) != 1 || got.Spec.DataVolumeTemplates[0].Name != "other" {
		t.Errorf("dataVolumeTemplates %+v: want only the one no restored volume uses", got.Spec.DataVolumeTemplates)
	}
}

func TestPlanRestoreToANewVM(t *testing.T) {
	vm := vmWith(pvcVol)
	vm.Labels = map[string]string{"app": "db"}
	vm.Spec.Template.Spec.Domain.Devices.Interfaces = []virtv1.Interface{{Name: "default", MacAddress: "02:00:00:00:00:01"}}
	content := contentFor(t, vm, claim("data-claim", "local", corev1.ClaimBound))
	r := &vmsnapshotv1.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Name: "clone", Namespace: "ns", UID: "r2"},
		Spec: vmsnapshotv1.VirtualMachineRestoreSpec{Target: corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "copy"},
			VolumeRestorePolicy: ptr.To(vmsnapshotv1.VolumeRestorePolicyPrefixTargetName),
			Patches: []string{`{"op": "replace", "path": "/spec/template/spec/domain/devices/interfaces/0/macAddress", "value": "02:00:00:00:00:02"}`,
				`{"op": "add", "path": "/metadata/labels/copy", "value": "yes"}`}}}
	p, err := snapshot.PlanRestore(r, content, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := p.VM
	if got.Name != "copy" || got.Namespace != "ns" || *got.Spec.RunStrategy != virtv1.RunStrategyHalted || got.Labels["copy"] != "yes" || got.Labels["app"] != "db" ||
		got.Spec.Template.Spec.Domain.Devices.Interfaces[0].MacAddress != "02:00:00:00:00:02" || got.UID != "" {
		t.Errorf("new VM %+v", got)
	}
	if p.Claims[0].Name != "copy-data" {
		t.Errorf("claim %s, want copy-data (PrefixTargetName)", p.Claims[0].Name)
	}
}

// TestPlanRestoreInPlace: with volumeRestorePolicy InPlace each claim is
// restored under the backed-up claim's own name; the VM's volumes stay as
// they are, a DataVolume's with its template, and the DataVolume's claim
// is marked filled for it.
func TestPlanRestoreInPlace(t *testing.T) {
	vm := vmWith(pvcVol, dvVol)
	vm.Spec.DataVolumeTemplates = []virtv1.DataVolumeTemplateSpec{{ObjectMeta: metav1.ObjectMeta{Name: "root-dv"}}}
	content := contentFor(t, vm, claim("data-claim", "local", corev1.ClaimBound), claim("root-dv", "local", corev1.ClaimBound))
	now := vm.DeepCopy()
	now.Spec.RunStrategy = ptr.To(virtv1.RunStrategyHalted)
	r := &vmsnapshotv1.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "ns", UID: "r-uid"},
		Spec: vmsnapshotv1.VirtualMachineRestoreSpec{Target: corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "vm"},
			VirtualMachineSnapshotName: "snap", VolumeRestorePolicy: ptr.To(vmsnapshotv1.VolumeRestorePolicyInPlace)}}
	if !snapshot.IsInPlace(r) {
		t.Fatal("IsInPlace = false")
	}
	p, err := snapshot.PlanRestore(r, content, now)
	if err != nil {
		t.Fatal(err)
	}
	want := []vmsnapshotv1.VolumeRestore{
		{VolumeName: "data", PersistentVolumeClaimName: "data-claim", VolumeSnapshotName: "vmsnapshot-snap-uid-volume-data"},
		{VolumeName: "root", PersistentVolumeClaimName: "root-dv", VolumeSnapshotName: "vmsnapshot-snap-uid-volume-root"},
	}
	if diff := cmp.Diff(want, p.Restores); diff != "" {
		t.Errorf("restores (-want +got):\n%s", diff)
	}
	if got := p.Claims[1].Annotations[dvspec.AnnPopulatedFor]; got != "root-dv" {
		t.Errorf("the DataVolume's restored claim: populatedFor %q, want root-dv", got)
	}
	if _, ok := p.Claims[0].Annotations[dvspec.AnnPopulatedFor]; ok {
		t.Errorf("a plain claim marked filled for a DataVolume: %v", p.Claims[0].Annotations)
	}
	if diff := cmp.Diff(now.Spec.Template.Spec.Volumes, p.VM.Spec.Template.Spec.Volumes); diff != "" {
		t.Errorf("volumes changed in place (-want +got):\n%s", diff)
	}
	if len(p.VM.Spec.DataVolumeTemplates) != 1 {
		t.Errorf("dataVolumeTemplates %+v: want the DataVolume's kept", p.VM.Spec.DataVolumeTemplates)
	}
}

func TestValidatePatches(t *testing.T) {
	errs := snapshot.ValidatePatches([]string{
		`{"op": "replace", "path": "/spec/running", "value": false}`,
		`{"op": "replace", "path": "/metadata/name", "value": "x"}`,
		`not json`,
	}, field.NewPath("spec", "patches"))
	var got []string
	for _, e := range errs {
		got = append(got, e.Field)
	}
	if diff := cmp.Diff([]string{"spec.patches[1].path", "spec.patches[2]"}, got); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
}

func TestIndications(t *testing.T) {
	vmi := &virtv1.VirtualMachineInstance{}
	if got, _ := snapshot.Indications(nil, true); got != nil {
		t.Errorf("stopped VM: %v, want none", got)
	}
	got, src := snapshot.Indications(vmi, true)
	if diff := cmp.Diff([]vmsnapshotv1.Indication{"NoGuestAgent", "Online"}, got); diff != "" || len(src) != 2 || src[0].Message == "" {
		t.Errorf("running VM without an agent (-want +got):\n%s %v", diff, src)
	}
	vmi.Status.Conditions = []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstanceAgentConnected, Status: corev1.ConditionTrue}}
	got, src = snapshot.Indications(vmi, true)
	if !cmp.Equal(got, []vmsnapshotv1.Indication{"GuestAgent", "Online"}) {
		t.Errorf("with the agent: %v", got)
	}
	if !snapshot.Freezes(&vmsnapshotv1.VirtualMachineSnapshotStatus{SourceIndications: src}) {
		t.Errorf("a snapshot that says GuestAgent does not freeze")
	}
	// Nobody to freeze the guest: it is not said to be.
	got, src = snapshot.Indications(vmi, false)
	if !cmp.Equal(got, []vmsnapshotv1.Indication{"NoGuestAgent", "Online"}) {
		t.Errorf("with the agent, without a freezer: %v", got)
	}
	if snapshot.Freezes(&vmsnapshotv1.VirtualMachineSnapshotStatus{SourceIndications: src}) || snapshot.Freezes(nil) {
		t.Errorf("a snapshot that says NoGuestAgent freezes")
	}
}

func TestVolumeSnapshotStatuses(t *testing.T) {
	claim := func(name string) virtv1.VolumeSource {
		return virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}
	}
	vm := &virtv1.VirtualMachine{Spec: virtv1.VirtualMachineSpec{Template: &virtv1.VirtualMachineInstanceTemplateSpec{Spec: virtv1.VirtualMachineInstanceSpec{
		Volumes: []virtv1.Volume{
			{Name: "root", VolumeSource: virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{}}},
			{Name: "data", VolumeSource: claim("data")},
			{Name: "dv", VolumeSource: virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: "dv"}}},
			{Name: "other", VolumeSource: claim("other")},
			{Name: "two", VolumeSource: claim("two")},
		}}}}}
	pvc := func(name, class string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(class)}}
	}
	f := snapshot.Facts{
		Claims: map[string]*corev1.PersistentVolumeClaim{"data": pvc("data", "local"), "other": pvc("other", "slow"), "two": pvc("two", "twice")},
		StorageClasses: map[string]*storagev1.StorageClass{
			"local": {ObjectMeta: metav1.ObjectMeta{Name: "local"}, Provisioner: "local.csi.virtkit.io"},
			"slow":  {ObjectMeta: metav1.ObjectMeta{Name: "slow"}, Provisioner: "example.com/none"},
			"twice": {ObjectMeta: metav1.ObjectMeta{Name: "twice"}, Provisioner: "example.com/two"},
		},
		SnapshotClasses: []volumesnapshotv1.VolumeSnapshotClass{
			{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Driver: "local.csi.virtkit.io"},
			{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Driver: "example.com/two"},
			{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Driver: "example.com/two"},
		},
	}
	want := []virtv1.VolumeSnapshotStatus{
		{Name: "root", Reason: "Snapshot is not supported for this volumeSource type [root]"},
		{Name: "data", Enabled: true},
		{Name: "dv", Reason: "PVC not found"},
		{Name: "other", Reason: "No VolumeSnapshotClass: Volume snapshots are not configured for this StorageClass [slow] [other]"},
		{Name: "two", Reason: `2 VolumeSnapshotClasses for StorageClass "twice" (driver example.com/two) and none is the default`},
	}
	if diff := cmp.Diff(want, snapshot.VolumeSnapshotStatuses(vm, f)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
}

// stateClaim is the backend-storage claim of VM "vm" in class.
func stateClaim(name, class string) *corev1.PersistentVolumeClaim {
	c := claim(name, class, corev1.ClaimBound)
	c.Labels = map[string]string{backendstorage.LabelVM: "vm", "team": "a"}
	return c
}

// withTPM gives vm a persistent vTPM.
func withTPM(vm *virtv1.VirtualMachine) *virtv1.VirtualMachine {
	vm.Spec.Template.Spec.Domain.Devices.TPM = &virtv1.TPMDevice{Persistent: ptr.To(true)}
	return vm
}

// TestBackendStorageInSnapshots: a VM's backend-storage claim is copied as
// a last volume named as KubeVirt names it, left out when its class has
// no snapshots or when the VM never started; a restore
// names the claim it restores it into, without the label that would make
// it a VM's before its time.
func TestBackendStorageInSnapshots(t *testing.T) {
	state := backendstorage.SnapshotVolumeName("vm")
	for _, tc := range []struct {
		name string
		f    snapshot.Facts
		want snapshot.Plan
	}{{
		name: "copied after the VM's volumes",
		f:    facts(claim("data-claim", "local", corev1.ClaimBound), stateClaim("persistent-state-for-vm-x7k2p", "local")),
		want: snapshot.Plan{Included: []snapshot.Volume{{Name: "data", Claim: "data-claim", SnapshotClass: "local"},
			{Name: state, Claim: "persistent-state-for-vm-x7k2p", SnapshotClass: "local"}}},
	}, {
		name: "a class without snapshots: left out, saying why",
		f:    facts(claim("data-claim", "local", corev1.ClaimBound), stateClaim("persistent-state-for-vm-x7k2p", "nfs")),
		want: snapshot.Plan{Included: []snapshot.Volume{{Name: "data", Claim: "data-claim", SnapshotClass: "local"}},
			Excluded: []snapshot.Excluded{{Name: state, Reason: `backend storage (EFI variables, vTPM): claim "persistent-state-for-vm-x7k2p": ` +
				`no VolumeSnapshotClass for StorageClass "nfs" (driver nfs.example.com): its volumes cannot be snapshotted: it is not snapshotted`}}},
	}, {
		name: "no claim (the VM never started): left out, saying why",
		f:    facts(claim("data-claim", "local", corev1.ClaimBound)),
		want: snapshot.Plan{Included: []snapshot.Volume{{Name: "data", Claim: "data-claim", SnapshotClass: "local"}},
			Excluded: []snapshot.Excluded{{Name: state, Reason: "backend storage (EFI variables, vTPM): the VM has no backend-storage claim: it never started, so it keeps no state yet"}}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := snapshot.PlanVolumes(withTPM(vmWith(pvcVol)), tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}

	vm := withTPM(vmWith(pvcVol))
	sc := stateClaim("persistent-state-for-vm-x7k2p", "local")
	st := snapshot.VolumeSnapshotStatuses(vm, facts(claim("data-claim", "local", corev1.ClaimBound), sc))
	if want := []virtv1.VolumeSnapshotStatus{{Name: "data", Enabled: true}, {Name: state, Enabled: true}}; !cmp.Equal(want, st) {
		t.Errorf("volume snapshot statuses (-want +got):\n%s", cmp.Diff(want, st))
	}

	content := contentFor(t, vm, claim("data-claim", "local", corev1.ClaimBound), sc)
	if n := len(content.Spec.VolumeBackups); n != 2 || content.Spec.VolumeBackups[1].VolumeName != state {
		t.Fatalf("volume backups %+v, want data and %s", content.Spec.VolumeBackups, state)
	}
	r := &vmsnapshotv1.VirtualMachineRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "ns", UID: "r-uid"},
		Spec: vmsnapshotv1.VirtualMachineRestoreSpec{Target: corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: "vm"}}}
	p, err := snapshot.PlanRestore(r, content, vm)
	if err != nil {
		t.Fatal(err)
	}
	if want := "restore-r-uid-" + state; p.StateClaim != want {
		t.Errorf("StateClaim %q, want %q", p.StateClaim, want)
	}
	for _, c := range p.Claims {
		if _, ok := c.Labels[backendstorage.LabelVM]; ok {
			t.Errorf("restored claim %s is labelled %s before the restore hands it over: %v", c.Name, backendstorage.LabelVM, c.Labels)
		}
	}
	if got := p.Claims[1].Labels["team"]; got != "a" {
		t.Errorf("restored state claim's other labels %v, want team=a kept", p.Claims[1].Labels)
	}
	if vols := p.VM.Spec.Template.Spec.Volumes; len(vols) != 1 {
		t.Errorf("restored VM volumes %+v: the backend storage is no volume of the VM", vols)
	}

	fresh, err := snapshot.PlanRestore(r, content, vm, snapshot.WithoutBackendStorage())
	if err != nil || fresh.StateClaim != "" || len(fresh.Claims) != 1 || len(fresh.Restores) != 1 {
		t.Errorf("WithoutBackendStorage: StateClaim %q, %d claims, restores %+v, %v; want only the data claim", fresh.StateClaim, len(fresh.Claims), fresh.Restores, err)
	}

	plain, err := snapshot.PlanRestore(r, contentFor(t, vmWith(pvcVol), claim("data-claim", "local", corev1.ClaimBound)), vmWith(pvcVol))
	if err != nil || plain.StateClaim != "" {
		t.Errorf("a VM without backend storage: StateClaim %q, %v", plain.StateClaim, err)
	}
}
