package spec

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	virtv1 "kubevirt.io/api/core/v1"
)

// errKey is what a rule test pins: the error type and the exact field path.
type errKey struct {
	Type  field.ErrorType
	Field string
}

func keys(errs field.ErrorList) []errKey {
	out := make([]errKey, 0, len(errs))
	for _, e := range errs {
		out = append(out, errKey{e.Type, e.Field})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Field != out[j].Field {
			return out[i].Field < out[j].Field
		}
		return out[i].Type < out[j].Type
	})
	return out
}

func assertErrs(t *testing.T, got field.ErrorList, want ...errKey) {
	t.Helper()
	w := append([]errKey{}, want...)
	sort.Slice(w, func(i, j int) bool {
		if w[i].Field != w[j].Field {
			return w[i].Field < w[j].Field
		}
		return w[i].Type < w[j].Type
	})
	if len(w) == 0 {
		w = []errKey{}
	}
	if diff := cmp.Diff(w, keys(got)); diff != "" {
		t.Errorf("errors (-want +got):\n%s\nall: %v", diff, got)
	}
}

func req(f string) errKey     { return errKey{field.ErrorTypeRequired, f} }
func inv(f string) errKey     { return errKey{field.ErrorTypeInvalid, f} }
func dup(f string) errKey     { return errKey{field.ErrorTypeDuplicate, f} }
func nsup(f string) errKey    { return errKey{field.ErrorTypeNotSupported, f} }
func forb(f string) errKey    { return errKey{field.ErrorTypeForbidden, f} }
func nf(f string) errKey      { return errKey{field.ErrorTypeNotFound, f} }
func tooMany(f string) errKey { return errKey{field.ErrorTypeTooMany, f} }
func tooLong(f string) errKey { return errKey{field.ErrorTypeTooLong, f} }

func qty(s string) *resource.Quantity { q := resource.MustParse(s); return &q }
func u32(v uint32) *uint32            { return &v }
func uintp(v uint) *uint              { return &v }

// userVMI is a typical VMI as a user writes it: a container disk root and a
// cloud-init disk, guest memory, nothing else.
func userVMI() *virtv1.VirtualMachineInstance {
	return &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "testvmi", Namespace: "default"},
		Spec: virtv1.VirtualMachineInstanceSpec{
			Domain: virtv1.DomainSpec{
				Memory: &virtv1.Memory{Guest: qty("1Gi")},
				Devices: virtv1.Devices{Disks: []virtv1.Disk{
					{Name: "rootdisk", DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusVirtio}}},
					{Name: "cloudinit"},
				}},
			},
			Volumes: []virtv1.Volume{
				{Name: "rootdisk", VolumeSource: virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "quay.io/containerdisks/fedora:40"}}},
				{Name: "cloudinit", VolumeSource: virtv1.VolumeSource{CloudInitNoCloud: &virtv1.CloudInitNoCloudSource{UserData: "#cloud-config\n"}}},
			},
		},
	}
}

// validVMI is userVMI defaulted: the base every validation row changes once.
func validVMI() *virtv1.VirtualMachineInstance {
	vmi := userVMI()
	DefaultVMI(vmi)
	return vmi
}
