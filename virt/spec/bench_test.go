package spec

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// BenchmarkDefaultValidate measures what the VMI admission path costs for a
// typical VMI (container disk, cloud-init, pod network): a deep copy (the
// webhook decodes a fresh object each time), DefaultVMI and ValidateVMI.
func BenchmarkDefaultValidate(b *testing.B) {
	base := userVMI()
	b.ReportAllocs()
	var errs field.ErrorList
	for b.Loop() {
		vmi := base.DeepCopy()
		DefaultVMI(vmi)
		errs = ValidateVMI(vmi)
	}
	if len(errs) > 0 {
		b.Fatal(errs)
	}
}

// BenchmarkValidate measures ValidateVMI alone on a defaulted VMI.
func BenchmarkValidate(b *testing.B) {
	vmi := validVMI()
	b.ReportAllocs()
	for b.Loop() {
		if errs := ValidateVMI(vmi); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
