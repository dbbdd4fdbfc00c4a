package spec

import (
	"path"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	virtv1 "kubevirt.io/api/core/v1"
)

// maxListLen bounds each device and volume list, as KubeVirt does (its
// arrayLenMax); longer lists are refused before any per-item rule runs so a
// hostile spec cannot make validation quadratic.
const maxListLen = 256

// specMode says which context a VMI spec is validated in.
type specMode struct {
	// template is true for a VM's template: KubeVirt adds disks for bare
	// volumes only when it creates the VMI, so that rule is VMI-only.
	template bool
	// computeFromInstancetype relaxes the memory-required rule for a VM
	// whose instancetype was not resolved (it will provide memory).
	computeFromInstancetype bool
}

// ValidateVMI checks a VirtualMachineInstance the way KubeVirt's VMI create
// admission does and returns every problem found, each naming its field
// (spec.domain.devices.disks[0].name) and the reason. Fields virtkit does not
// implement yet are rejected as such (see IsUnsupported and
// UnsupportedFeatures). ValidateVMI does not change vmi; run DefaultVMI first
// to validate what will run.
func ValidateVMI(vmi *virtv1.VirtualMachineInstance, opts ...Option) field.ErrorList {
	if vmi == nil {
		return field.ErrorList{field.Required(field.NewPath("spec"), "a VirtualMachineInstance is required")}
	}
	c := newConfig(opts)
	errs := validateObjectMeta(field.NewPath("metadata"), &vmi.ObjectMeta)
	return append(errs, validateSpec(&c, field.NewPath("spec"), &vmi.Spec, specMode{})...)
}

// validateObjectMeta checks what the API server would, so that a caller that
// validates before creating gets the same answer.
func validateObjectMeta(p *field.Path, m *metav1.ObjectMeta) field.ErrorList {
	var errs field.ErrorList
	switch {
	case m.Name == "" && m.GenerateName == "":
		errs = append(errs, field.Required(p.Child("name"), "name or generateName is required"))
	case m.Name != "":
		for _, msg := range validation.IsDNS1123Subdomain(m.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), m.Name, msg))
		}
	}
	errs = append(errs, metav1validation.ValidateLabels(m.Labels, p.Child("labels"))...)
	return append(errs, apivalidation.ValidateAnnotations(m.Annotations, p.Child("annotations"))...)
}

// validateSpec is the rule set shared by VMIs and VM templates. p is the
// path of the spec ("spec" or "spec.template.spec").
func validateSpec(c *config, p *field.Path, s *virtv1.VirtualMachineInstanceSpec, mode specMode) field.ErrorList {
	var errs field.ErrorList
	d := &s.Domain.Devices
	for _, l := range [...]struct {
		path string
		n    int
	}{
		{"domain.devices.disks", len(d.Disks)}, {"volumes", len(s.Volumes)},
		{"domain.devices.interfaces", len(d.Interfaces)}, {"networks", len(s.Networks)},
		{"domain.devices.filesystems", len(d.Filesystems)}, {"domain.devices.hostDevices", len(d.HostDevices)},
		{"domain.devices.inputs", len(d.Inputs)},
	} {
		if l.n > maxListLen {
			errs = append(errs, field.TooMany(pathOf(p, l.path, 0), l.n, maxListLen))
		}
	}
	if len(errs) > 0 {
		return errs
	}

	errs = append(errs, validateUnsupported(p, s)...)
	errs = append(errs, validatePlacement(c, p, s)...)
	errs = append(errs, validateCPU(p, s)...)
	errs = append(errs, validateMemory(c, p, s, mode)...)
	errs = append(errs, validateDisks(p.Child("domain", "devices", "disks"), s.Domain.Devices.Disks)...)
	errs = append(errs, validateVolumes(c, p.Child("volumes"), s.Volumes)...)
	errs = append(errs, validateDiskVolumeMapping(p, s, mode)...)
	errs = append(errs, validateFilesystems(p, s)...)
	errs = append(errs, validateNetworking(p, s)...)
	errs = append(errs, validateBootOrder(p, s)...)
	errs = append(errs, validateFirmware(p.Child("domain", "firmware"), s)...)
	errs = append(errs, validateFeatures(p.Child("domain", "features"), s)...)
	errs = append(errs, validateClock(p.Child("domain", "clock"), s.Domain.Clock)...)
	errs = append(errs, validateDevices(c, p, s)...)
	errs = append(errs, validateIOThreads(p.Child("domain"), s)...)
	errs = append(errs, validateProbe(p.Child("readinessProbe"), s.ReadinessProbe)...)
	errs = append(errs, validateProbe(p.Child("livenessProbe"), s.LivenessProbe)...)
	errs = append(errs, validateDNS(p, s)...)
	errs = append(errs, validateAccessCredentials(p.Child("accessCredentials"), s)...)
	return errs
}

// validatePlacement covers the spec's scheduling and identity fields.
func validatePlacement(c *config, p *field.Path, s *virtv1.VirtualMachineInstanceSpec) field.ErrorList {
	var errs field.ErrorList
	if s.Hostname != "" {
		for _, msg := range validation.IsDNS1123Label(s.Hostname) {
			errs = append(errs, field.Invalid(p.Child("hostname"), s.Hostname, msg))
		}
	}
	if s.Subdomain != "" {
		for _, msg := range validation.IsDNS1123Label(s.Subdomain) {
			errs = append(errs, field.Invalid(p.Child("subdomain"), s.Subdomain, msg))
		}
	}
	if g := s.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(p.Child("terminationGracePeriodSeconds"), *g, "must be greater than or equal to 0"))
	}
	if e := s.EvictionStrategy; e != nil {
		switch *e {
		case virtv1.EvictionStrategyNone, virtv1.EvictionStrategyLiveMigrate,
			virtv1.EvictionStrategyLiveMigrateIfPossible, virtv1.EvictionStrategyExternal:
		default:
			errs = append(errs, field.NotSupported(p.Child("evictionStrategy"), *e,
				[]string{"None", "LiveMigrate", "LiveMigrateIfPossible", "External"}))
		}
	}
	if st := s.StartStrategy; st != nil && *st != virtv1.StartStrategyPaused {
		errs = append(errs, field.NotSupported(p.Child("startStrategy"), *st, []string{string(virtv1.StartStrategyPaused)}))
	}
	arch := c.effectiveArch(s)
	switch arch {
	case ArchAMD64, ArchARM64, ArchS390X:
	default:
		errs = append(errs, field.NotSupported(p.Child("architecture"), s.Architecture, []string{ArchAMD64, ArchARM64, ArchS390X}))
	}
	if m := s.Domain.Machine; m != nil && m.Type != "" && !matchesAny(m.Type, c.machinePatterns(arch)) {
		errs = append(errs, field.NotSupported(p.Child("domain", "machine", "type"), m.Type, c.machinePatterns(arch)))
	}
	return errs
}

func matchesAny(s string, patterns []string) bool {
	for _, pat := range patterns {
		if ok, err := path.Match(pat, s); err == nil && ok {
			return true
		}
	}
	return false
}

// validateDNS follows the Pod rules KubeVirt copies for its launcher pod.
func validateDNS(p *field.Path, s *virtv1.VirtualMachineInstanceSpec) field.ErrorList {
	var errs field.ErrorList
	switch s.DNSPolicy {
	case "", "ClusterFirst", "ClusterFirstWithHostNet", "Default", "None":
	default:
		errs = append(errs, field.NotSupported(p.Child("dnsPolicy"), s.DNSPolicy,
			[]string{"ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"}))
	}
	if s.DNSPolicy == "None" && (s.DNSConfig == nil || len(s.DNSConfig.Nameservers) == 0) {
		errs = append(errs, field.Required(p.Child("dnsConfig", "nameservers"), "must provide at least one DNS nameserver when dnsPolicy is None"))
	}
	if d := s.DNSConfig; d != nil {
		if len(d.Nameservers) > 3 {
			errs = append(errs, field.TooMany(p.Child("dnsConfig", "nameservers"), len(d.Nameservers), 3))
		}
		if len(d.Searches) > 32 {
			errs = append(errs, field.TooMany(p.Child("dnsConfig", "searches"), len(d.Searches), 32))
		}
	}
	return errs
}

// validateProbe checks a readiness or liveness probe has exactly one action.
func validateProbe(p *field.Path, probe *virtv1.Probe) field.ErrorList {
	if probe == nil {
		return nil
	}
	var errs field.ErrorList
	if n := count(probe.Exec != nil, probe.HTTPGet != nil, probe.TCPSocket != nil, probe.GuestAgentPing != nil); n != 1 {
		errs = append(errs, field.Invalid(p, n, "must have exactly one of exec, httpGet, tcpSocket, guestAgentPing"))
	}
	if probe.Exec != nil && len(probe.Exec.Command) == 0 {
		// The launcher would run nothing in the guest and fail every time.
		errs = append(errs, field.Required(p.Child("exec", "command"), "an exec probe needs a command to run in the guest"))
	}
	for _, f := range []struct {
		name string
		v    int32
	}{
		{"initialDelaySeconds", probe.InitialDelaySeconds}, {"timeoutSeconds", probe.TimeoutSeconds},
		{"periodSeconds", probe.PeriodSeconds}, {"successThreshold", probe.SuccessThreshold},
		{"failureThreshold", probe.FailureThreshold},
	} {
		if f.v < 0 {
			errs = append(errs, field.Invalid(p.Child(f.name), f.v, "must be greater than or equal to 0"))
		}
	}
	return errs
}

// validateAbsPath checks a path inside an image is absolute and clean, as
// KubeVirt's ValidatePath does, so it cannot point outside the image.
func validateAbsPath(p *field.Path, v string) field.ErrorList {
	if v == "/" {
		return field.ErrorList{field.Invalid(p, v, "must not point to root")}
	}
	if !strings.HasPrefix(v, "/") || path.Clean(v) != strings.TrimSuffix(v, "/") {
		return field.ErrorList{field.Invalid(p, v, "must be an absolute path to a file without relative components")}
	}
	return nil
}
