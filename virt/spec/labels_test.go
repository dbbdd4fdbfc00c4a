package spec_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/spec"
)

func TestValidateReservedLabels(t *testing.T) {
	path := field.NewPath("metadata", "labels")
	forbidden := func(key string) string { return "Forbidden " + path.Key(key).String() }
	for _, c := range []struct {
		name   string
		labels map[string]string
		old    map[string]string
		want   []string
	}{
		{name: "a user's own labels, kubevirt.io ones included", labels: map[string]string{"app": "web", "kubevirt.io/vm": "web", "kubevirt.io/domain": "web"}},
		{name: "created-by at creation", labels: map[string]string{virtv1.CreatedByLabel: "uid"}, want: []string{forbidden(virtv1.CreatedByLabel)}},
		{name: "every reserved label at creation, in key order",
			labels: map[string]string{virtv1.MigrationJobLabel: "m", virtv1.NodeNameLabel: "n", virtv1.MigrationTargetNodeNameLabel: "t",
				virtv1.NodeSchedulable: "true", virtv1.InstallStrategyLabel: "x"},
			want: []string{forbidden(virtv1.InstallStrategyLabel), forbidden(virtv1.MigrationJobLabel), forbidden(virtv1.MigrationTargetNodeNameLabel),
				forbidden(virtv1.NodeNameLabel), forbidden(virtv1.NodeSchedulable)}},
		{name: "kept unchanged on update", labels: map[string]string{virtv1.NodeNameLabel: "n", "app": "new"}, old: map[string]string{virtv1.NodeNameLabel: "n", "app": "old"}},
		{name: "changed on update", labels: map[string]string{virtv1.NodeNameLabel: "other"}, old: map[string]string{virtv1.NodeNameLabel: "n"},
			want: []string{forbidden(virtv1.NodeNameLabel)}},
		{name: "removed on update", labels: map[string]string{}, old: map[string]string{virtv1.NodeNameLabel: "n"},
			want: []string{forbidden(virtv1.NodeNameLabel)}},
		{name: "set empty where it was absent", labels: map[string]string{virtv1.MigrationJobLabel: ""}, old: map[string]string{},
			want: []string{forbidden(virtv1.MigrationJobLabel)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, e := range spec.ValidateReservedLabels(path, c.labels, c.old) {
				got = append(got, string(e.Type)[len("FieldValue"):]+" "+e.Field)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHotpluggable(t *testing.T) {
	for _, c := range []struct {
		name string
		src  virtv1.VolumeSource
		want bool
	}{
		{"hotpluggable claim", virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{Hotpluggable: true}}, true},
		{"hotpluggable data volume", virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: "dv", Hotpluggable: true}}, true},
		{"plain claim", virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{}}, false},
		{"container disk", virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "i"}}, false},
	} {
		if got := spec.Hotpluggable(&virtv1.Volume{Name: "v", VolumeSource: c.src}); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestInstanceID(t *testing.T) {
	long := "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-very-long-virtual-machine-name-xyz"
	for _, c := range []struct{ name, want string }{
		{"tiny", "tiny"},
		{long[:63], long[:63]},
		// KubeVirt's value for a 75-character name: 54 characters, a dash,
		// 8 hex digits of the name's SHA-1.
		{long, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-very-long-vir-328f27d7"},
	} {
		if got := spec.InstanceID(c.name); got != c.want {
			t.Errorf("InstanceID(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}
