package spec

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	virtv1 "kubevirt.io/api/core/v1"
	poolv1 "kubevirt.io/api/pool/v1beta1"
)

// ValidatePool checks a VirtualMachinePool as KubeVirt's admission does: a
// template of VMs, validated as a VirtualMachine's spec at
// spec.virtualMachineTemplate.spec, a selector matching the template's
// labels (TemplateSelector), no negative replicas, and a maxUnavailable
// that is a count or a percentage. It refuses, as not supported yet, the
// pool features virtkit does not implement: autohealing, state
// preservation on scale-in and node selector requirements in a selection
// policy.
func ValidatePool(pool *poolv1.VirtualMachinePool, opts ...Option) field.ErrorList {
	if pool == nil {
		return field.ErrorList{field.Required(field.NewPath("spec"), "a VirtualMachinePool is required")}
	}
	c := newConfig(opts)
	sp := field.NewPath("spec")
	errs := validateObjectMeta(field.NewPath("metadata"), &pool.ObjectMeta)
	if r := pool.Spec.Replicas; r != nil && *r < 0 {
		errs = append(errs, field.Invalid(sp.Child("replicas"), *r, "must be greater than or equal to 0"))
	}
	if u := pool.Spec.MaxUnavailable; u != nil {
		if _, err := MaxUnavailable(u, 1); err != nil {
			errs = append(errs, field.Invalid(sp.Child("maxUnavailable"), u.String(), err.Error()))
		}
	}
	errs = append(errs, unsupportedPoolFields(sp, &pool.Spec)...)
	t := pool.Spec.VirtualMachineTemplate
	tp := sp.Child("virtualMachineTemplate")
	if t == nil {
		return append(errs, field.Required(tp, "a VirtualMachinePool needs a template of its VirtualMachines"))
	}
	_, serrs := TemplateSelector(sp.Child("selector"), pool.Spec.Selector, t.ObjectMeta.Labels)
	errs = append(errs, serrs...)
	m := t.ObjectMeta
	m.Name, m.GenerateName = "template", ""
	errs = append(errs, validateObjectMeta(tp.Child("metadata"), &m)...)
	return append(errs, validateVMSpec(&c, tp.Child("spec"), pool.Namespace, &t.Spec)...)
}

// unsupportedPoolFields refuses the pool features virtkit does not
// implement, naming each field.
func unsupportedPoolFields(sp *field.Path, s *poolv1.VirtualMachinePoolSpec) field.ErrorList {
	var errs field.ErrorList
	refuse := func(p *field.Path, reason string) {
		errs = append(errs, field.Forbidden(p, UnsupportedPrefix+reason))
	}
	if s.Autohealing != nil {
		refuse(sp.Child("autohealing"), "replacing VMs that keep failing to start is not implemented")
	}
	preserving := func(p *field.Path, sp *poolv1.StatePreservation) {
		if sp != nil && *sp != poolv1.StatePreservationDisabled {
			refuse(p, "keeping the claims of VMs scaled in is not implemented; use Disabled")
		}
	}
	nodeMatch := func(p *field.Path, sel *poolv1.VirtualMachinePoolSelectionPolicy) {
		if sel != nil && sel.Selectors != nil && sel.Selectors.NodeSelectorRequirementMatcher != nil {
			refuse(p.Child("selectors", "nodeSelectorRequirementMatcher"), "selecting VMs by their node is not implemented; use labelSelector")
		}
	}
	if in := s.ScaleInStrategy; in != nil {
		ip := sp.Child("scaleInStrategy")
		if o := in.Opportunistic; o != nil {
			preserving(ip.Child("opportunistic", "statePreservation"), o.StatePreservation)
		}
		if p := in.Proactive; p != nil {
			preserving(ip.Child("proactive", "statePreservation"), p.StatePreservation)
			nodeMatch(ip.Child("proactive", "selectionPolicy"), p.SelectionPolicy)
		}
	}
	if u := s.UpdateStrategy; u != nil && u.Proactive != nil {
		nodeMatch(sp.Child("updateStrategy", "proactive", "selectionPolicy"), u.Proactive.SelectionPolicy)
	}
	return errs
}

// MaxUnavailable resolves a pool's maxUnavailable (a count, or a
// percentage of replicas rounded down) as KubeVirt does: nil is 100%, and
// the result is never below 1.
func MaxUnavailable(v *intstr.IntOrString, replicas int32) (int, error) {
	n := int(replicas)
	switch {
	case v == nil:
	case v.Type == intstr.Int:
		if v.IntVal < 0 {
			return 0, fmt.Errorf("must not be negative")
		}
		n = int(v.IntVal)
	default:
		pct, ok := strings.CutSuffix(v.StrVal, "%")
		p, err := strconv.Atoi(pct)
		if !ok || err != nil || p < 0 || p > 100 {
			return 0, fmt.Errorf("must be a number or a percentage from 0%% to 100%%")
		}
		n = int(replicas) * p / 100
	}
	return max(n, 1), nil
}

// PoolVMName is the name of the VM at index i of a pool: "NAME-i", as
// KubeVirt names them.
func PoolVMName(pool string, i int) string { return pool + "-" + strconv.Itoa(i) }

// PoolIndex is the index a pool VM's name carries, false when it carries
// none.
func PoolIndex(pool, vm string) (int, bool) {
	rest, ok := strings.CutPrefix(vm, pool+"-")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	if err != nil || i < 0 || strconv.Itoa(i) != rest {
		return 0, false
	}
	return i, true
}

// NewVMFromPool returns the VirtualMachine at index i of pool, as KubeVirt's
// pool controller builds it: named PoolVMName, with the template's labels
// and annotations, the revision the pool's spec was stored in
// (kubevirt.io/vm-pool-revision-name, on the VM and on its VMI template),
// the pool's finalizer, controlled by the pool, and the spec PoolVMSpec
// gives.
func NewVMFromPool(pool *poolv1.VirtualMachinePool, i int, revision string) *virtv1.VirtualMachine {
	if pool == nil || pool.Spec.VirtualMachineTemplate == nil {
		return nil
	}
	t := pool.Spec.VirtualMachineTemplate
	vm := &virtv1.VirtualMachine{
		TypeMeta: metav1.TypeMeta{APIVersion: virtv1.GroupVersion.String(), Kind: virtv1.VirtualMachineGroupVersionKind.Kind},
		ObjectMeta: metav1.ObjectMeta{
			Name:            PoolVMName(pool.Name, i),
			Namespace:       pool.Namespace,
			Labels:          maps.Clone(t.ObjectMeta.Labels),
			Annotations:     maps.Clone(t.ObjectMeta.Annotations),
			Finalizers:      []string{poolv1.VirtualMachinePoolControllerFinalizer},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pool, poolv1.SchemeGroupVersion.WithKind(poolv1.VirtualMachinePoolKind))},
		},
		Spec: PoolVMSpec(&pool.Spec, i),
	}
	SetPoolRevision(vm, revision)
	return vm
}

// SetPoolRevision labels vm and its VMI template with the pool revision
// its spec came from.
func SetPoolRevision(vm *virtv1.VirtualMachine, revision string) {
	if vm.Labels == nil {
		vm.Labels = map[string]string{}
	}
	vm.Labels[virtv1.VirtualMachinePoolRevisionName] = revision
	if t := vm.Spec.Template; t != nil {
		if t.ObjectMeta.Labels == nil {
			t.ObjectMeta.Labels = map[string]string{}
		}
		t.ObjectMeta.Labels[virtv1.VirtualMachinePoolRevisionName] = revision
	}
}

// PoolVMSpec is the spec of the VM at index i of a pool: the template's,
// with "-i" appended to each dataVolumeTemplate's name (and to the volumes
// using it), and, as spec.nameGeneration asks, to the Secrets (cloud-init
// user and network data included) and ConfigMaps its volumes name, so that
// each VM gets a disk and a cloud-init of its own.
func PoolVMSpec(s *poolv1.VirtualMachinePoolSpec, i int) virtv1.VirtualMachineSpec {
	out := *s.VirtualMachineTemplate.Spec.DeepCopy()
	suffix := "-" + strconv.Itoa(i)
	dvs := map[string]string{}
	for j := range out.DataVolumeTemplates {
		dv := &out.DataVolumeTemplates[j]
		dvs[dv.Name] = dv.Name + suffix
		dv.Name += suffix
	}
	var secrets, configMaps bool
	if g := s.NameGeneration; g != nil {
		secrets = g.AppendIndexToSecretRefs != nil && *g.AppendIndexToSecretRefs
		configMaps = g.AppendIndexToConfigMapRefs != nil && *g.AppendIndexToConfigMapRefs
	}
	if out.Template == nil {
		return out
	}
	ref := func(r *corev1.LocalObjectReference) {
		if r != nil {
			r.Name += suffix
		}
	}
	for j := range out.Template.Spec.Volumes {
		v := &out.Template.Spec.Volumes[j].VolumeSource
		switch {
		case v.PersistentVolumeClaim != nil:
			if n, ok := dvs[v.PersistentVolumeClaim.ClaimName]; ok {
				v.PersistentVolumeClaim.ClaimName = n
			}
		case v.DataVolume != nil:
			if n, ok := dvs[v.DataVolume.Name]; ok {
				v.DataVolume.Name = n
			}
		case v.ConfigMap != nil && configMaps:
			v.ConfigMap.Name += suffix
		case v.Secret != nil && secrets:
			v.Secret.SecretName += suffix
		case v.CloudInitNoCloud != nil && secrets:
			ref(v.CloudInitNoCloud.UserDataSecretRef)
			ref(v.CloudInitNoCloud.NetworkDataSecretRef)
		case v.CloudInitConfigDrive != nil && secrets:
			ref(v.CloudInitConfigDrive.UserDataSecretRef)
			ref(v.CloudInitConfigDrive.NetworkDataSecretRef)
		}
	}
	return out
}
