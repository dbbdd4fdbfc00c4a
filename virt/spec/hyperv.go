package spec

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	virtv1 "kubevirt.io/api/core/v1"
)

// hypervDep says that Hyper-V enlightenment name needs the one named needs
// (QEMU refuses the guest otherwise). The pointers reach into the spec so the
// same list serves defaulting and validation.
type hypervDep struct {
	name, needs string
	state       *virtv1.FeatureState
	requirement **virtv1.FeatureState
}

func hypervDeps(h *virtv1.FeatureHyperv) []hypervDep {
	var synicTimer *virtv1.FeatureState
	if h.SyNICTimer != nil {
		synicTimer = &h.SyNICTimer.FeatureState
	}
	var tlbflush *virtv1.FeatureState
	if h.TLBFlush != nil {
		tlbflush = &h.TLBFlush.FeatureState
	}
	return []hypervDep{
		{name: "synic", needs: "vpindex", state: h.SyNIC, requirement: &h.VPIndex},
		{name: "synictimer", needs: "synic", state: synicTimer, requirement: &h.SyNIC},
		{name: "tlbflush", needs: "vpindex", state: tlbflush, requirement: &h.VPIndex},
		{name: "ipi", needs: "vpindex", state: h.IPI, requirement: &h.VPIndex},
		{name: "evmcs", needs: "vapic", state: h.EVMCS, requirement: &h.VAPIC},
	}
}

func featureOn(s *virtv1.FeatureState) bool {
	return s != nil && (s.Enabled == nil || *s.Enabled)
}

// defaultHypervDependencies is KubeVirt's SetHypervFeatureDependencies: an
// enlightenment that is on turns on what it needs when the user left that
// unset. What the user explicitly turned off is left for validation to report.
// Order matters: synictimer may turn on synic, which then needs vpindex.
func defaultHypervDependencies(spec *virtv1.VirtualMachineInstanceSpec) {
	f := spec.Domain.Features
	if f == nil || f.Hyperv == nil {
		return
	}
	for pass := 0; pass < 2; pass++ {
		for _, d := range hypervDeps(f.Hyperv) {
			if featureOn(d.state) && *d.requirement == nil {
				*d.requirement = &virtv1.FeatureState{Enabled: boolPtr(true)}
			}
		}
	}
}

func validateHyperv(p *field.Path, f *virtv1.Features) field.ErrorList {
	if f == nil || f.Hyperv == nil {
		return nil
	}
	var errs field.ErrorList
	hp := p.Child("hyperv")
	for _, d := range hypervDeps(f.Hyperv) {
		if featureOn(d.state) && *d.requirement != nil && !featureOn(*d.requirement) {
			errs = append(errs, field.Invalid(hp.Child(d.needs, "enabled"), false,
				"Hyper-V "+d.name+" requires "+d.needs+", which is disabled"))
		}
	}
	if s := f.Hyperv.Spinlocks; s != nil && featureOn(&s.FeatureState) && s.Retries != nil && *s.Retries < 4095 {
		errs = append(errs, field.Invalid(hp.Child("spinlocks", "spinlocks"), *s.Retries,
			"must be at least 4095 (Hyper-V spinlock retry minimum)"))
	}
	if v := f.Hyperv.VendorID; v != nil && featureOn(&v.FeatureState) && len(v.VendorID) > 12 {
		errs = append(errs, field.TooLong(hp.Child("vendorid", "vendorid"), v.VendorID, 12))
	}
	return errs
}
