package clone

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clonev1 "kubevirt.io/api/clone/v1beta1"
	virtv1 "kubevirt.io/api/core/v1"
	vmsnapshotv1 "kubevirt.io/api/snapshot/v1beta1"

	"github.com/virtkit/virtkit/virt/storage/snapshot"
)

func TestKeep(t *testing.T) {
	for _, tc := range []struct {
		filters []string
		key     string
		want    bool
	}{
		{nil, "anything", true},
		{[]string{"*"}, "anything", true},
		{[]string{"app"}, "app", true},
		{[]string{"app"}, "apple", false},
		{[]string{"example.com/*"}, "example.com/team", true},
		{[]string{"example.com/*"}, "other.com/team", false},
		{[]string{"*", "!example.com/*"}, "example.com/team", false},
		{[]string{"!example.com/*", "*"}, "example.com/team", false},
		{[]string{"*", "!example.com/*"}, "app", true},
		{[]string{"!app"}, "app", false},
		{[]string{"!app"}, "other", false},
	} {
		if got := Keep(tc.filters, tc.key); got != tc.want {
			t.Errorf("Keep(%q, %q) = %v, want %v", tc.filters, tc.key, got, tc.want)
		}
	}
}

func vmSource(name string) *corev1.TypedLocalObjectReference {
	return &corev1.TypedLocalObjectReference{APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachine", Name: name}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec clonev1.VirtualMachineCloneSpec
		want []string
	}{
		{name: "a VM to a named VM", spec: clonev1.VirtualMachineCloneSpec{Source: vmSource("a"), Target: vmSource("b")}},
		{name: "a snapshot", spec: clonev1.VirtualMachineCloneSpec{Source: &corev1.TypedLocalObjectReference{
			APIGroup: ptr.To("snapshot.kubevirt.io"), Kind: "VirtualMachineSnapshot", Name: "s"}}},
		{name: "no source", want: []string{"spec.source: Required value"}},
		{name: "a pod", spec: clonev1.VirtualMachineCloneSpec{Source: &corev1.TypedLocalObjectReference{Kind: "Pod", Name: "p"}},
			want: []string{`spec.source.kind: Unsupported value: "Pod"`, "spec.source.apiGroup: Required value"}},
		{name: "the wrong group", spec: clonev1.VirtualMachineCloneSpec{Source: &corev1.TypedLocalObjectReference{
			APIGroup: ptr.To("kubevirt.io"), Kind: "VirtualMachineSnapshot", Name: "s"}},
			want: []string{`spec.source.apiGroup: Unsupported value: "kubevirt.io": supported values: "snapshot.kubevirt.io"`}},
		{name: "onto itself", spec: clonev1.VirtualMachineCloneSpec{Source: vmSource("a"), Target: vmSource("a")},
			want: []string{`spec.target.name: Invalid value: "a": the target cannot be the source VirtualMachine itself`}},
		{name: "a snapshot target", spec: clonev1.VirtualMachineCloneSpec{Source: vmSource("a"), Target: &corev1.TypedLocalObjectReference{Kind: "VirtualMachineSnapshot", Name: "b"}},
			want: []string{`spec.target.kind: Unsupported value: "VirtualMachineSnapshot"`}},
		{name: "a bad target name", spec: clonev1.VirtualMachineCloneSpec{Source: vmSource("a"), Target: vmSource("B_")},
			want: []string{`spec.target.name: Invalid value: "B_"`}},
		{name: "filters", spec: clonev1.VirtualMachineCloneSpec{Source: vmSource("a"), LabelFilters: []string{"!"},
			AnnotationFilters: []string{"a!b"}, Template: clonev1.VirtualMachineCloneTemplateFilters{LabelFilters: []string{"*a"}, AnnotationFilters: []string{"ok*", ""}}},
			want: []string{`spec.labelFilters[0]: Invalid value: "!"`, `spec.annotationFilters[0]: Invalid value: "a!b"`,
				`spec.template.labelFilters[0]: Invalid value: "*a"`, `spec.template.annotationFilters[1]: Invalid value: ""`}},
		{name: "a bad MAC", spec: clonev1.VirtualMachineCloneSpec{Source: vmSource("a"), NewMacAddresses: map[string]string{"default": "00-11-22", "other": ""}},
			want: []string{`spec.newMacAddresses[default]: Invalid value: "00-11-22"`}},
		{name: "a bad patch", spec: clonev1.VirtualMachineCloneSpec{Source: vmSource("a"), Patches: []string{`{"op": "add", "path": "/status/x", "value": 1}`, `{`}},
			want: []string{`spec.patches[0].path: Invalid value: "/status/x"`, `spec.patches[1]: Invalid value: "{"`}},
		{name: "a bad volume name policy", spec: clonev1.VirtualMachineCloneSpec{Source: vmSource("a"), VolumeNamePolicy: ptr.To(clonev1.VolumeNamePolicy("InPlace"))},
			want: []string{`spec.volumeNamePolicy: Unsupported value: "InPlace"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := Validate(&clonev1.VirtualMachineClone{Spec: tc.spec})
			if len(errs) != len(tc.want) {
				t.Fatalf("errors %v, want %d: %q", errs, len(tc.want), tc.want)
			}
			for i, e := range errs {
				if !strings.HasPrefix(e.Error(), tc.want[i]) {
					t.Errorf("error %d: %q, want it to start with %q", i, e.Error(), tc.want[i])
				}
			}
		})
	}
}

func TestDefaultAndTarget(t *testing.T) {
	c := &clonev1.VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{UID: "u1"}, Spec: clonev1.VirtualMachineCloneSpec{Source: vmSource("db")}}
	if got := Target(c).Name; got != "clone-db-"+SuffixOf("u1") {
		t.Errorf("undefaulted target %q", got)
	}
	if !Default(c, "x2z4b") {
		t.Fatal("Default changed nothing")
	}
	if diff := cmp.Diff(vmSource("clone-db-x2z4b"), c.Spec.Target); diff != "" {
		t.Errorf("target (-want +got):\n%s", diff)
	}
	if Default(c, "other") {
		t.Error("Default changed a named target")
	}
	long := TargetName(strings.Repeat("a", 80), "x2z4b")
	if len(long) != 63 || !strings.HasSuffix(long, "a-x2z4b") {
		t.Errorf("TargetName of a long source: %q (%d)", long, len(long))
	}
	if s := SuffixOf("u1"); len(s) != 5 || s != SuffixOf("u1") || s == SuffixOf("u2") {
		t.Errorf("SuffixOf: %q, %q", s, SuffixOf("u2"))
	}
}

func TestPatches(t *testing.T) {
	vm := &virtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "db",
			Labels:      map[string]string{"app": "db", "example.com/team": "a"},
			Annotations: map[string]string{"note": "x", snapshot.LastRestoreAnnotation: "old"}},
		Spec: virtv1.VirtualMachineSpec{Template: &virtv1.VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a/b": "1", "keep": "2"}},
			Spec: virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{
				Firmware: &virtv1.Firmware{UUID: "0000", Serial: "s1"},
				Devices: virtv1.Devices{Interfaces: []virtv1.Interface{
					{Name: "default", MacAddress: "02:00:00:00:00:01"}, {Name: "second"}, {Name: "third", MacAddress: "02:00:00:00:00:03"}}},
			}}}},
	}
	spec := &clonev1.VirtualMachineCloneSpec{
		NewMacAddresses: map[string]string{"second": "02:00:00:00:00:22"},
		LabelFilters:    []string{"*", "!example.com/*"},
		// Leaves out every annotation but the restore's own.
		AnnotationFilters: []string{"!*"},
		Template:          clonev1.VirtualMachineCloneTemplateFilters{LabelFilters: []string{"keep"}},
		Patches:           []string{`{"op": "add", "path": "/metadata/labels/new", "value": "1"}`},
	}
	got, err := Patches(vm, spec)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"op":"remove","path":"/spec/template/spec/domain/devices/interfaces/0/macAddress"}`,
		`{"op":"add","path":"/spec/template/spec/domain/devices/interfaces/1/macAddress","value":"02:00:00:00:00:22"}`,
		`{"op":"remove","path":"/spec/template/spec/domain/devices/interfaces/2/macAddress"}`,
		`{"op":"remove","path":"/spec/template/spec/domain/firmware/serial"}`,
		`{"op":"remove","path":"/spec/template/spec/domain/firmware/uuid"}`,
		`{"op":"remove","path":"/metadata/labels/example.com~1team"}`,
		`{"op":"remove","path":"/metadata/annotations/note"}`,
		`{"op":"remove","path":"/spec/template/metadata/labels/a~1b"}`,
		`{"op": "add", "path": "/metadata/labels/new", "value": "1"}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("patches (-want +got):\n%s", diff)
	}
	// They apply to the VM they were made from.
	patched, err := snapshot.ApplyPatches(vm.DeepCopy(), got)
	if err != nil {
		t.Fatal(err)
	}
	ifaces := patched.Spec.Template.Spec.Domain.Devices.Interfaces
	if ifaces[0].MacAddress != "" || ifaces[1].MacAddress != "02:00:00:00:00:22" || ifaces[2].MacAddress != "" {
		t.Errorf("MACs after the patches: %+v", ifaces)
	}
	if diff := cmp.Diff(map[string]string{"app": "db", "new": "1"}, patched.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{snapshot.LastRestoreAnnotation: "old"}, patched.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if fw := patched.Spec.Template.Spec.Domain.Firmware; fw.UUID != "" || fw.Serial != "" {
		t.Errorf("firmware after the patches: %+v", fw)
	}

	// A new serial on a VM without firmware settings.
	vm.Spec.Template.Spec.Domain.Firmware = nil
	got, err = Patches(vm, &clonev1.VirtualMachineCloneSpec{NewSMBiosSerial: ptr.To("s2")})
	if err != nil {
		t.Fatal(err)
	}
	patched, err = snapshot.ApplyPatches(vm.DeepCopy(), got)
	if err != nil {
		t.Fatal(err)
	}
	if fw := patched.Spec.Template.Spec.Domain.Firmware; fw == nil || fw.Serial != "s2" {
		t.Errorf("firmware after the patches %q: %+v", got, fw)
	}
}

func TestObjects(t *testing.T) {
	c := &clonev1.VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "u1"},
		Spec: clonev1.VirtualMachineCloneSpec{Source: vmSource("db"), Target: vmSource("db-2"), VolumeNamePolicy: ptr.To(clonev1.VolumeNamePolicyPrefixTargetName)}}
	s := Snapshot(c, "db")
	if s.Name != "tmp-snapshot-u1" || s.Namespace != "ns" || s.Spec.Source.Name != "db" || OwnerOf(s) != "c" {
		t.Errorf("snapshot %+v", s)
	}
	r := Restore(c, s.Name, []string{"p"})
	want := vmsnapshotv1.VirtualMachineRestoreSpec{Target: *vmSource("db-2"), VirtualMachineSnapshotName: "tmp-snapshot-u1", Patches: []string{"p"},
		VolumeRestorePolicy: ptr.To(vmsnapshotv1.VolumeRestorePolicyPrefixTargetName)}
	if diff := cmp.Diff(want, r.Spec); diff != "" || r.Name != "tmp-restore-u1" || OwnerOf(r) != "c" {
		t.Errorf("restore %s owned by %q (-want +got):\n%s", r.Name, OwnerOf(r), diff)
	}
}

func TestCheckContent(t *testing.T) {
	claim := virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{}}
	content := &vmsnapshotv1.VirtualMachineSnapshotContent{Spec: vmsnapshotv1.VirtualMachineSnapshotContentSpec{
		VirtualMachineSnapshotName: ptr.To("s"),
		Source: vmsnapshotv1.SourceSpec{VirtualMachine: &vmsnapshotv1.VirtualMachine{Spec: virtv1.VirtualMachineSpec{
			Template: &virtv1.VirtualMachineInstanceTemplateSpec{Spec: virtv1.VirtualMachineInstanceSpec{Volumes: []virtv1.Volume{
				{Name: "root", VolumeSource: virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{}}},
				{Name: "data", VolumeSource: claim}, {Name: "logs", VolumeSource: claim}}}}}}},
		VolumeBackups: []vmsnapshotv1.VolumeBackup{{VolumeName: "data", VolumeSnapshotName: ptr.To("vs")}},
	}}
	err := CheckContent(content)
	if err == nil || err.Error() != "volume logs is not backed up in snapshot s" {
		t.Errorf("CheckContent: %v", err)
	}
	content.Spec.VolumeBackups = append(content.Spec.VolumeBackups, vmsnapshotv1.VolumeBackup{VolumeName: "logs", VolumeSnapshotName: ptr.To("vs2")})
	if err := CheckContent(content); err != nil {
		t.Errorf("CheckContent with every claim backed up: %v", err)
	}
}

func TestSetConditions(t *testing.T) {
	t0, t1 := metav1.Unix(100, 0), metav1.Unix(200, 0)
	st := &clonev1.VirtualMachineCloneStatus{}
	SetConditions(st, Processing, "", t0)
	SetConditions(st, Processing, "", t1)
	want := []clonev1.Condition{
		{Type: clonev1.ConditionProgressing, Status: corev1.ConditionTrue, Reason: "Still processing", LastTransitionTime: t0},
		{Type: clonev1.ConditionReady, Status: corev1.ConditionFalse, Reason: "Still processing", LastTransitionTime: t0},
	}
	if diff := cmp.Diff(want, st.Conditions); diff != "" {
		t.Errorf("processing (-want +got):\n%s", diff)
	}
	SetConditions(st, Pending, "source missing", t1)
	want = []clonev1.Condition{
		{Type: clonev1.ConditionProgressing, Status: corev1.ConditionFalse, Reason: "Pending", LastTransitionTime: t1},
		{Type: clonev1.ConditionReady, Status: corev1.ConditionFalse, Reason: "source missing", LastTransitionTime: t1},
	}
	if diff := cmp.Diff(want, st.Conditions); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}
	SetConditions(st, Done, "", t1)
	if c := st.Conditions[1]; c.Status != corev1.ConditionTrue || c.Reason != "Ready" {
		t.Errorf("done: %+v", st.Conditions)
	}
}
