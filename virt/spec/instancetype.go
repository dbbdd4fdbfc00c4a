package spec

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	virtv1 "kubevirt.io/api/core/v1"
	apiinstancetype "kubevirt.io/api/instancetype"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
)

// Kinds a matcher resolves to.
const (
	KindInstancetype        = "VirtualMachineInstancetype"
	KindClusterInstancetype = "VirtualMachineClusterInstancetype"
	KindPreference          = "VirtualMachinePreference"
	KindClusterPreference   = "VirtualMachineClusterPreference"
)

// Errors callers branch on when resolving a matcher.
var (
	// ErrUnknownKind: the matcher's kind is none of the accepted spellings.
	ErrUnknownKind = errors.New("unknown kind")
	// ErrNotMatched: the object for the matcher's kind was not supplied, or
	// its name is not the matcher's.
	ErrNotMatched = errors.New("object does not match the matcher")
)

// InstancetypeKind returns the kind a VM's instancetype matcher refers to.
// As in KubeVirt an empty kind means the cluster-wide kind, and the resource
// names (singular or plural, any case) are accepted as well as the kinds.
func InstancetypeKind(m *virtv1.InstancetypeMatcher) (string, error) {
	switch strings.ToLower(m.Kind) {
	case "", strings.ToLower(KindClusterInstancetype), apiinstancetype.ClusterSingularResourceName, apiinstancetype.ClusterPluralResourceName:
		return KindClusterInstancetype, nil
	case strings.ToLower(KindInstancetype), apiinstancetype.SingularResourceName, apiinstancetype.PluralResourceName:
		return KindInstancetype, nil
	}
	return "", fmt.Errorf("instancetype matcher kind %q: %w", m.Kind, ErrUnknownKind)
}

// PreferenceKind is InstancetypeKind for preference matchers.
func PreferenceKind(m *virtv1.PreferenceMatcher) (string, error) {
	switch strings.ToLower(m.Kind) {
	case "", strings.ToLower(KindClusterPreference), apiinstancetype.ClusterSingularPreferenceResourceName, apiinstancetype.ClusterPluralPreferenceResourceName:
		return KindClusterPreference, nil
	case strings.ToLower(KindPreference), apiinstancetype.SingularPreferenceResourceName, apiinstancetype.PluralPreferenceResourceName:
		return KindPreference, nil
	}
	return "", fmt.Errorf("preference matcher kind %q: %w", m.Kind, ErrUnknownKind)
}

// InstancetypeSpecFor returns the spec of the instancetype a VM's matcher
// selects: the namespaced object for a namespaced kind, the cluster object
// otherwise. The caller fetched whichever it could; the other may be nil.
func InstancetypeSpecFor(m *virtv1.InstancetypeMatcher, namespaced *instancetypev1beta1.VirtualMachineInstancetype,
	cluster *instancetypev1beta1.VirtualMachineClusterInstancetype) (*instancetypev1beta1.VirtualMachineInstancetypeSpec, error) {
	if m == nil {
		return nil, nil
	}
	kind, err := InstancetypeKind(m)
	if err != nil {
		return nil, err
	}
	switch {
	case kind == KindInstancetype && namespaced != nil && namespaced.Name == m.Name:
		return &namespaced.Spec, nil
	case kind == KindClusterInstancetype && cluster != nil && cluster.Name == m.Name:
		return &cluster.Spec, nil
	}
	return nil, fmt.Errorf("%s %q: %w", kind, m.Name, ErrNotMatched)
}

// PreferenceSpecFor is InstancetypeSpecFor for preferences.
func PreferenceSpecFor(m *virtv1.PreferenceMatcher, namespaced *instancetypev1beta1.VirtualMachinePreference,
	cluster *instancetypev1beta1.VirtualMachineClusterPreference) (*instancetypev1beta1.VirtualMachinePreferenceSpec, error) {
	if m == nil {
		return nil, nil
	}
	kind, err := PreferenceKind(m)
	if err != nil {
		return nil, err
	}
	switch {
	case kind == KindPreference && namespaced != nil && namespaced.Name == m.Name:
		return &namespaced.Spec, nil
	case kind == KindClusterPreference && cluster != nil && cluster.Name == m.Name:
		return &cluster.Spec, nil
	}
	return nil, fmt.Errorf("%s %q: %w", kind, m.Name, ErrNotMatched)
}

// ApplyInstancetype expands an instancetype and a preference into vmiSpec,
// as KubeVirt does when it creates a VM's VMI (and, on a copy, when it admits
// the VM). Either may be nil. basePath is where vmiSpec sits in the object
// the caller reports on (spec.template.spec for a VM, spec for a VMI).
//
// The instancetype decides: a value it provides that vmiSpec also sets (CPU
// topology or requests, memory, GPUs, ...) is a conflict, reported as
// field.Forbidden at the VM's field. The preference only fills what vmiSpec
// leaves unset. Its requirements (minimum vCPUs, memory) are checked against
// the instancetype, or against vmiSpec when there is none. On any error
// vmiSpec is left untouched.
func ApplyInstancetype(vmiSpec *virtv1.VirtualMachineInstanceSpec, basePath *field.Path,
	it *instancetypev1beta1.VirtualMachineInstancetypeSpec, pref *instancetypev1beta1.VirtualMachinePreferenceSpec) field.ErrorList {
	if vmiSpec == nil || (it == nil && pref == nil) {
		return nil
	}
	if basePath == nil {
		basePath = field.NewPath("spec")
	}
	work := vmiSpec.DeepCopy()
	var errs field.ErrorList
	if it != nil {
		errs = append(errs, applyInstancetypeSpec(work, basePath, it, pref)...)
	}
	errs = append(errs, checkRequirements(vmiSpec, basePath, it, pref)...)
	if len(errs) > 0 {
		return errs
	}
	applyPreference(work, pref)
	*vmiSpec = *work
	return nil
}

func conflict(p *field.Path) *field.Error {
	return field.Forbidden(p, "conflicts with the selected instancetype, which sets this value; remove it from the VM")
}

func applyInstancetypeSpec(s *virtv1.VirtualMachineInstanceSpec, bp *field.Path,
	it *instancetypev1beta1.VirtualMachineInstancetypeSpec, pref *instancetypev1beta1.VirtualMachinePreferenceSpec) field.ErrorList {
	var errs field.ErrorList
	dp := bp.Child("domain")
	if it.NodeSelector != nil {
		if s.NodeSelector != nil {
			errs = append(errs, conflict(bp.Child("nodeSelector")))
		} else {
			s.NodeSelector = make(map[string]string, len(it.NodeSelector))
			for k, v := range it.NodeSelector {
				s.NodeSelector[k] = v
			}
		}
	}
	if it.SchedulerName != "" {
		if s.SchedulerName != "" {
			errs = append(errs, conflict(bp.Child("schedulerName")))
		} else {
			s.SchedulerName = it.SchedulerName
		}
	}
	errs = append(errs, applyInstancetypeCPU(s, dp, it, pref)...)
	errs = append(errs, applyInstancetypeMemory(s, dp, it)...)
	if it.IOThreadsPolicy != nil {
		if s.Domain.IOThreadsPolicy != nil {
			errs = append(errs, conflict(dp.Child("ioThreadsPolicy")))
		} else {
			p := *it.IOThreadsPolicy
			s.Domain.IOThreadsPolicy = &p
		}
	}
	if it.IOThreads != nil {
		if s.Domain.IOThreads != nil {
			errs = append(errs, conflict(dp.Child("ioThreads")))
		} else {
			s.Domain.IOThreads = it.IOThreads.DeepCopy()
		}
	}
	if it.LaunchSecurity != nil {
		if s.Domain.LaunchSecurity != nil {
			errs = append(errs, conflict(dp.Child("launchSecurity")))
		} else {
			s.Domain.LaunchSecurity = it.LaunchSecurity.DeepCopy()
		}
	}
	if len(it.GPUs) > 0 {
		if len(s.Domain.Devices.GPUs) > 0 {
			errs = append(errs, conflict(dp.Child("devices", "gpus")))
		} else {
			for i := range it.GPUs {
				s.Domain.Devices.GPUs = append(s.Domain.Devices.GPUs, *it.GPUs[i].DeepCopy())
			}
		}
	}
	if len(it.HostDevices) > 0 {
		if len(s.Domain.Devices.HostDevices) > 0 {
			errs = append(errs, conflict(dp.Child("devices", "hostDevices")))
		} else {
			for i := range it.HostDevices {
				s.Domain.Devices.HostDevices = append(s.Domain.Devices.HostDevices, *it.HostDevices[i].DeepCopy())
			}
		}
	}
	return errs
}

// applyInstancetypeCPU is KubeVirt's applyCPU: the instancetype owns the vCPU
// count, so any topology or CPU request/limit in the VM conflicts; the
// preference shapes the topology.
func applyInstancetypeCPU(s *virtv1.VirtualMachineInstanceSpec, dp *field.Path,
	it *instancetypev1beta1.VirtualMachineInstancetypeSpec, pref *instancetypev1beta1.VirtualMachinePreferenceSpec) field.ErrorList {
	if s.Domain.CPU == nil {
		s.Domain.CPU = &virtv1.CPU{}
	}
	cpu := s.Domain.CPU
	cp := dp.Child("cpu")
	var errs field.ErrorList
	if _, ok := s.Domain.Resources.Requests[k8sv1.ResourceCPU]; ok {
		errs = append(errs, conflict(dp.Child("resources", "requests", "cpu")))
	}
	if _, ok := s.Domain.Resources.Limits[k8sv1.ResourceCPU]; ok {
		errs = append(errs, conflict(dp.Child("resources", "limits", "cpu")))
	}
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"sockets", cpu.Sockets != 0}, {"cores", cpu.Cores != 0}, {"threads", cpu.Threads != 0},
		{"model", cpu.Model != "" && it.CPU.Model != nil},
		{"dedicatedCpuPlacement", cpu.DedicatedCPUPlacement && it.CPU.DedicatedCPUPlacement != nil},
		{"isolateEmulatorThread", cpu.IsolateEmulatorThread && it.CPU.IsolateEmulatorThread != nil},
		{"numa", cpu.NUMA != nil && it.CPU.NUMA != nil},
		{"realtime", cpu.Realtime != nil && it.CPU.Realtime != nil},
		{"maxSockets", cpu.MaxSockets != 0 && it.CPU.MaxSockets != nil},
	} {
		if f.set {
			errs = append(errs, conflict(cp.Child(f.name)))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if it.CPU.Model != nil {
		cpu.Model = *it.CPU.Model
	}
	if it.CPU.DedicatedCPUPlacement != nil {
		cpu.DedicatedCPUPlacement = *it.CPU.DedicatedCPUPlacement
	}
	if it.CPU.IsolateEmulatorThread != nil {
		cpu.IsolateEmulatorThread = *it.CPU.IsolateEmulatorThread
	}
	if it.CPU.NUMA != nil {
		cpu.NUMA = it.CPU.NUMA.DeepCopy()
	}
	if it.CPU.Realtime != nil {
		cpu.Realtime = it.CPU.Realtime.DeepCopy()
	}
	if it.CPU.MaxSockets != nil {
		cpu.MaxSockets = *it.CPU.MaxSockets
	}
	cpu.Sockets, cpu.Cores, cpu.Threads = topologyFor(it.CPU.Guest, pref)
	return nil
}

// topologyFor spreads vCPUs over sockets, cores and threads as the
// preference asks (KubeVirt's applyGuestCPUTopology); sockets by default.
func topologyFor(vcpus uint32, pref *instancetypev1beta1.VirtualMachinePreferenceSpec) (sockets, cores, threads uint32) {
	sockets, cores, threads = 1, 1, 1
	if vcpus <= 1 {
		return
	}
	topo := instancetypev1beta1.Sockets
	if pref != nil && pref.CPU != nil && pref.CPU.PreferredCPUTopology != nil {
		topo = *pref.CPU.PreferredCPUTopology
	}
	switch topo {
	case instancetypev1beta1.Cores, instancetypev1beta1.DeprecatedPreferCores:
		cores = vcpus
	case instancetypev1beta1.Threads, instancetypev1beta1.DeprecatedPreferThreads:
		threads = vcpus
	case instancetypev1beta1.Spread, instancetypev1beta1.DeprecatedPreferSpread:
		ratio, across := spreadOptions(pref)
		switch across {
		case instancetypev1beta1.SpreadAcrossCoresThreads:
			threads, cores = ratio, vcpus/ratio
		case instancetypev1beta1.SpreadAcrossSocketsCoresThreads:
			const threadsPerCore = 2
			threads, cores, sockets = threadsPerCore, ratio, vcpus/threadsPerCore/ratio
		default:
			cores, sockets = ratio, vcpus/ratio
		}
	default:
		sockets = vcpus
	}
	return
}

func spreadOptions(pref *instancetypev1beta1.VirtualMachinePreferenceSpec) (uint32, instancetypev1beta1.SpreadAcross) {
	ratio, across := uint32(2), instancetypev1beta1.SpreadAcrossSocketsCores
	if pref.PreferSpreadSocketToCoreRatio != 0 {
		ratio = pref.PreferSpreadSocketToCoreRatio
	}
	if o := pref.CPU.SpreadOptions; o != nil {
		if o.Ratio != nil && *o.Ratio != 0 {
			ratio = *o.Ratio
		}
		if o.Across != nil {
			across = *o.Across
		}
	}
	return ratio, across
}

// applyInstancetypeMemory is KubeVirt's applyMemory: the instancetype owns
// guest memory, and its overcommit lowers the memory request below it.
func applyInstancetypeMemory(s *virtv1.VirtualMachineInstanceSpec, dp *field.Path, it *instancetypev1beta1.VirtualMachineInstancetypeSpec) field.ErrorList {
	if s.Domain.Memory != nil {
		return field.ErrorList{conflict(dp.Child("memory"))}
	}
	if _, ok := s.Domain.Resources.Requests[k8sv1.ResourceMemory]; ok {
		return field.ErrorList{conflict(dp.Child("resources", "requests", "memory"))}
	}
	if _, ok := s.Domain.Resources.Limits[k8sv1.ResourceMemory]; ok {
		return field.ErrorList{conflict(dp.Child("resources", "limits", "memory"))}
	}
	guest := it.Memory.Guest.DeepCopy()
	s.Domain.Memory = &virtv1.Memory{Guest: &guest}
	if oc := it.Memory.OvercommitPercent; oc > 0 && oc < 100 {
		if s.Domain.Resources.Requests == nil {
			s.Domain.Resources.Requests = k8sv1.ResourceList{}
		}
		req := guest.Value() * int64(100-oc) / 100
		s.Domain.Resources.Requests[k8sv1.ResourceMemory] = *resource.NewQuantity(req, guest.Format)
	}
	if it.Memory.Hugepages != nil {
		s.Domain.Memory.Hugepages = it.Memory.Hugepages.DeepCopy()
	}
	if it.Memory.MaxGuest != nil {
		m := it.Memory.MaxGuest.DeepCopy()
		s.Domain.Memory.MaxGuest = &m
	}
	return nil
}

// checkRequirements checks a preference's minimums against what the VM will
// get: the instancetype's values, or the VM's own when it has none.
func checkRequirements(s *virtv1.VirtualMachineInstanceSpec, bp *field.Path,
	it *instancetypev1beta1.VirtualMachineInstancetypeSpec, pref *instancetypev1beta1.VirtualMachinePreferenceSpec) field.ErrorList {
	if pref == nil || pref.Requirements == nil {
		return nil
	}
	r := pref.Requirements
	var errs field.ErrorList
	if r.CPU != nil && r.CPU.Guest > 0 {
		var have uint64
		from := "instancetype"
		if it != nil {
			have = uint64(it.CPU.Guest)
		} else {
			from = "VM"
			if c := s.Domain.CPU; c != nil {
				have = uint64(nz(c.Sockets)) * uint64(nz(c.Cores)) * uint64(nz(c.Threads))
			} else {
				have = 1
			}
		}
		if have < uint64(r.CPU.Guest) {
			errs = append(errs, field.Invalid(bp.Child("domain", "cpu"), have,
				fmt.Sprintf("the %s provides %d vCPUs but the preference requires at least %d", from, have, r.CPU.Guest)))
		}
	}
	if r.Memory != nil && !r.Memory.Guest.IsZero() {
		var have resource.Quantity
		from := "instancetype"
		if it != nil {
			have = it.Memory.Guest
		} else {
			from = "VM"
			if m := s.Domain.Memory; m != nil && m.Guest != nil {
				have = *m.Guest
			} else if q, ok := s.Domain.Resources.Requests[k8sv1.ResourceMemory]; ok {
				have = q
			}
		}
		if have.Cmp(r.Memory.Guest) < 0 {
			errs = append(errs, field.Invalid(bp.Child("domain", "memory", "guest"), have.String(),
				fmt.Sprintf("the %s provides %s of memory but the preference requires at least %s", from, have.String(), r.Memory.Guest.String())))
		}
	}
	if r.Architecture != nil && s.Architecture != "" && s.Architecture != *r.Architecture {
		errs = append(errs, field.Invalid(bp.Child("architecture"), s.Architecture,
			fmt.Sprintf("the preference requires architecture %s", *r.Architecture)))
	}
	return errs
}

// ApplyAnnotations copies instancetype and preference annotations onto the
// VMI's metadata, as KubeVirt does: an instancetype annotation the VMI
// already has with another value is a conflict; a preference annotation only
// fills a missing key. On error meta is left untouched.
func ApplyAnnotations(meta *metav1.ObjectMeta, it *instancetypev1beta1.VirtualMachineInstancetypeSpec,
	pref *instancetypev1beta1.VirtualMachinePreferenceSpec) field.ErrorList {
	if meta == nil {
		return nil
	}
	var errs field.ErrorList
	if it != nil {
		for _, k := range sortedKeys(it.Annotations) {
			if cur, ok := meta.Annotations[k]; ok && cur != it.Annotations[k] {
				errs = append(errs, conflict(field.NewPath("metadata", "annotations").Key(k)))
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	set := func(k, v string, overwrite bool) {
		if meta.Annotations == nil {
			meta.Annotations = map[string]string{}
		}
		if _, ok := meta.Annotations[k]; !ok || overwrite {
			meta.Annotations[k] = v
		}
	}
	if it != nil {
		for k, v := range it.Annotations {
			set(k, v, true)
		}
	}
	if pref != nil {
		for k, v := range pref.Annotations {
			set(k, v, false)
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
