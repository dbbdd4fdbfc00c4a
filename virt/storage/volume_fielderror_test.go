package storage_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit/virt/spec"
	"github.com/virtkit/virtkit/virt/storage"
	"github.com/virtkit/virtkit/virt/storage/fake"
)

func TestVolumeErrorFieldError(t *testing.T) {
	const pvcField = "spec.volumes[0].persistentVolumeClaim"
	omit := field.OmitValueType{}
	for _, tc := range []struct {
		name string
		err  *storage.VolumeError
		want *field.Error
		text string
	}{
		{"not found", &storage.VolumeError{Volume: "blk", Field: pvcField, Path: "/dev/blk", Detail: "the claim's block device is missing", Err: storage.ErrNotFound},
			&field.Error{Type: field.ErrorTypeNotFound, Field: pvcField, BadValue: omit, Detail: "/dev/blk: the claim's block device is missing"},
			pvcField + ": Not found: /dev/blk: the claim's block device is missing"},
		{"too large", &storage.VolumeError{Volume: "root", Field: pvcField, Path: "/d.img", Detail: "virtual size 2 GiB exceeds 1 GiB", Err: storage.ErrImageTooLarge},
			&field.Error{Type: field.ErrorTypeInvalid, Field: pvcField, BadValue: omit, Detail: "/d.img: virtual size 2 GiB exceeds 1 GiB"},
			pvcField + ": Invalid value: /d.img: virtual size 2 GiB exceeds 1 GiB"},
		{"unknown format", &storage.VolumeError{Volume: "root", Field: pvcField, Path: "/d.img", Detail: "a vmdk image; only raw and qcow2 are supported", Err: storage.ErrUnknownFormat},
			&field.Error{Type: field.ErrorTypeNotSupported, Field: pvcField, BadValue: omit, Detail: "/d.img: a vmdk image; only raw and qcow2 are supported"},
			pvcField + ": Unsupported value: /d.img: a vmdk image; only raw and qcow2 are supported"},
		{"unsafe", &storage.VolumeError{Volume: "root", Field: pvcField, Path: "/d.img", Detail: `backing file "/etc/shadow"`, Err: storage.ErrUnsafeImage},
			&field.Error{Type: field.ErrorTypeForbidden, Field: pvcField, BadValue: omit, Detail: `/d.img: backing file "/etc/shadow"`},
			pvcField + `: Forbidden: /d.img: backing file "/etc/shadow"`},
		{"unsupported", &storage.VolumeError{Volume: "s", Field: "spec.volumes[2]", Detail: "virtkit cannot make a disk of this volume source yet", Err: storage.ErrUnsupported},
			&field.Error{Type: field.ErrorTypeForbidden, Field: "spec.volumes[2]", BadValue: omit, Detail: spec.UnsupportedPrefix + "virtkit cannot make a disk of this volume source yet"},
			"spec.volumes[2]: Forbidden: not supported by virtkit yet: virtkit cannot make a disk of this volume source yet"},
		{"invalid, no field", &storage.VolumeError{Volume: "cfg", Detail: `file name "a:b" cannot be carried`, Err: storage.ErrInvalid},
			&field.Error{Type: field.ErrorTypeInvalid, Field: "spec.volumes[cfg]", BadValue: omit, Detail: `file name "a:b" cannot be carried`},
			`spec.volumes[cfg]: Invalid value: file name "a:b" cannot be carried`},
		{"a wrapped sentinel keeps its words", &storage.VolumeError{Volume: "root", Field: pvcField, Detail: "reading the disk image", Err: fmt.Errorf("short header: %w", storage.ErrInvalid)},
			&field.Error{Type: field.ErrorTypeInvalid, Field: pvcField, BadValue: omit, Detail: "reading the disk image: short header: invalid volume"},
			pvcField + ": Invalid value: reading the disk image: short header: invalid volume"},
		{"a bare sentinel is all there is", &storage.VolumeError{Volume: "root", Field: pvcField, Path: "/d.img", Err: storage.ErrNotFound},
			&field.Error{Type: field.ErrorTypeNotFound, Field: pvcField, BadValue: omit, Detail: "/d.img: not found"},
			pvcField + ": Not found: /d.img: not found"},
		{"an I/O error on the node", &storage.VolumeError{Volume: "root", Path: "/d.img", Detail: "preparing containerDisk", Err: fs.ErrPermission},
			&field.Error{Type: field.ErrorTypeInternal, Field: "spec.volumes[root]", BadValue: omit, Detail: "/d.img: preparing containerDisk: permission denied"},
			"spec.volumes[root]: Internal error: /d.img: preparing containerDisk: permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.err.FieldError()
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("FieldError() (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.text, got.Error()); d != "" {
				t.Errorf("text (-want +got):\n%s", d)
			}
			if got, want := spec.IsUnsupported(got), errors.Is(tc.err, storage.ErrUnsupported); got != want {
				t.Errorf("spec.IsUnsupported = %v, want %v", got, want)
			}
		})
	}
}

// Plan reports every volume that fails; each carries its field.
func TestPlanFieldErrors(t *testing.T) {
	vmi := vmiWith(vol("a", pvc("c")), vol("b", pvc("d")))
	vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, vmi.Spec.Domain.Devices.Disks[0])
	vmi.Spec.Domain.Devices.Disks[2].Name = "ghost"
	m := storage.New(storage.WithLayout(testLayout), storage.WithInspector(fake.FS{}))
	_, err := m.Plan(context.Background(), vmi, storage.Pod{})
	var got []string
	for _, fe := range spec.FieldErrors(err) {
		got = append(got, fe.Field+" "+string(fe.Type))
	}
	want := []string{
		"spec.volumes[0].persistentVolumeClaim FieldValueNotFound",
		"spec.volumes[1].persistentVolumeClaim FieldValueNotFound",
		"spec.domain.devices.disks[2].name FieldValueInvalid",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("fields (-want +got):\n%s\n(error: %v)", d, err)
	}
}
