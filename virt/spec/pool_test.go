package spec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	virtv1 "kubevirt.io/api/core/v1"
	poolv1 "kubevirt.io/api/pool/v1beta1"
)

func validPool() *poolv1.VirtualMachinePool {
	vm := validVM()
	three := int32(3)
	return &poolv1.VirtualMachinePool{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "pool-uid"},
		Spec: poolv1.VirtualMachinePoolSpec{
			Replicas: &three,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			VirtualMachineTemplate: &poolv1.VirtualMachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       vm.Spec,
			},
		},
	}
}

func TestValidatePoolRules(t *testing.T) {
	const ts = "spec.virtualMachineTemplate.spec"
	disabled := poolv1.StatePreservationDisabled
	offline := poolv1.StatePreservationOffline
	for _, r := range []struct {
		name   string
		mutate func(*poolv1.VirtualMachinePool)
		want   []errKey
	}{
		{"valid", func(*poolv1.VirtualMachinePool) {}, nil},
		{"negative replicas", func(p *poolv1.VirtualMachinePool) { n := int32(-1); p.Spec.Replicas = &n }, []errKey{inv("spec.replicas")}},
		{"template required", func(p *poolv1.VirtualMachinePool) { p.Spec.VirtualMachineTemplate = nil },
			[]errKey{req("spec.virtualMachineTemplate")}},
		{"selector must match", func(p *poolv1.VirtualMachinePool) { p.Spec.Selector.MatchLabels["app"] = "db" }, []errKey{inv("spec.selector")}},
		{"empty selector", func(p *poolv1.VirtualMachinePool) { p.Spec.Selector = &metav1.LabelSelector{} }, []errKey{req("spec.selector")}},
		{"VM spec validated where it sits", func(p *poolv1.VirtualMachinePool) {
			p.Spec.VirtualMachineTemplate.Spec.Template.Spec.Domain.Devices.Disks[0].Cache = "unsafe"
		}, []errKey{nsup(ts + ".template.spec.domain.devices.disks[0].cache")}},
		{"VM run strategy", func(p *poolv1.VirtualMachinePool) {
			rs := virtv1.VirtualMachineRunStrategy("Sometimes")
			p.Spec.VirtualMachineTemplate.Spec.RunStrategy = &rs
		}, []errKey{nsup(ts + ".runStrategy")}},
		{"maxUnavailable percentage", func(p *poolv1.VirtualMachinePool) { v := intstr.FromString("50%"); p.Spec.MaxUnavailable = &v }, nil},
		{"maxUnavailable nonsense", func(p *poolv1.VirtualMachinePool) { v := intstr.FromString("half"); p.Spec.MaxUnavailable = &v },
			[]errKey{inv("spec.maxUnavailable")}},
		{"autohealing not supported", func(p *poolv1.VirtualMachinePool) {
			p.Spec.Autohealing = &poolv1.VirtualMachinePoolAutohealingStrategy{}
		}, []errKey{forb("spec.autohealing")}},
		{"state preservation Disabled is fine", func(p *poolv1.VirtualMachinePool) {
			p.Spec.ScaleInStrategy = &poolv1.VirtualMachinePoolScaleInStrategy{Proactive: &poolv1.VirtualMachinePoolProactiveScaleInStrategy{StatePreservation: &disabled}}
		}, nil},
		{"state preservation not supported", func(p *poolv1.VirtualMachinePool) {
			p.Spec.ScaleInStrategy = &poolv1.VirtualMachinePoolScaleInStrategy{Opportunistic: &poolv1.VirtualMachinePoolOpportunisticScaleInStrategy{StatePreservation: &offline}}
		}, []errKey{forb("spec.scaleInStrategy.opportunistic.statePreservation")}},
		{"node selection not supported", func(p *poolv1.VirtualMachinePool) {
			p.Spec.UpdateStrategy = &poolv1.VirtualMachinePoolUpdateStrategy{Proactive: &poolv1.VirtualMachinePoolProactiveUpdateStrategy{
				SelectionPolicy: &poolv1.VirtualMachinePoolSelectionPolicy{Selectors: &poolv1.VirtualMachinePoolSelectors{
					NodeSelectorRequirementMatcher: &[]corev1.NodeSelectorRequirement{}}}}}
		}, []errKey{forb("spec.updateStrategy.proactive.selectionPolicy.selectors.nodeSelectorRequirementMatcher")}},
	} {
		t.Run(r.name, func(t *testing.T) {
			p := validPool()
			r.mutate(p)
			assertErrs(t, ValidatePool(p), r.want...)
		})
	}
	for _, e := range ValidatePool(func() *poolv1.VirtualMachinePool {
		p := validPool()
		p.Spec.Autohealing = &poolv1.VirtualMachinePoolAutohealingStrategy{}
		return p
	}()) {
		if !IsUnsupported(e) {
			t.Errorf("%v is not reported as unsupported", e)
		}
	}
}

func TestPoolVMSpecIndexesNames(t *testing.T) {
	p := validPool()
	yes := true
	p.Spec.NameGeneration = &poolv1.VirtualMachinePoolNameGeneration{AppendIndexToSecretRefs: &yes}
	tpl := &p.Spec.VirtualMachineTemplate.Spec
	tpl.DataVolumeTemplates = []virtv1.DataVolumeTemplateSpec{{ObjectMeta: metav1.ObjectMeta{Name: "root"}}}
	tpl.Template.Spec.Volumes = []virtv1.Volume{
		{Name: "a", VolumeSource: virtv1.VolumeSource{DataVolume: &virtv1.DataVolumeSource{Name: "root"}}},
		{Name: "b", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "shared"}}}},
		{Name: "c", VolumeSource: virtv1.VolumeSource{CloudInitNoCloud: &virtv1.CloudInitNoCloudSource{
			UserDataSecretRef: &corev1.LocalObjectReference{Name: "userdata"}}}},
		{Name: "d", VolumeSource: virtv1.VolumeSource{ConfigMap: &virtv1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
	}
	got := PoolVMSpec(&p.Spec, 2)
	var names []string
	for _, v := range got.Template.Spec.Volumes {
		switch {
		case v.DataVolume != nil:
			names = append(names, v.DataVolume.Name)
		case v.PersistentVolumeClaim != nil:
			names = append(names, v.PersistentVolumeClaim.ClaimName)
		case v.CloudInitNoCloud != nil:
			names = append(names, v.CloudInitNoCloud.UserDataSecretRef.Name)
		case v.ConfigMap != nil:
			names = append(names, v.ConfigMap.Name)
		}
	}
	// The claim no template makes is shared; ConfigMaps keep their names
	// unless asked.
	if d := cmp.Diff([]string{"root-2", "shared", "userdata-2", "settings"}, names); d != "" {
		t.Errorf("volume sources (-want +got):\n%s", d)
	}
	if got.DataVolumeTemplates[0].Name != "root-2" {
		t.Errorf("dataVolumeTemplate %q, want root-2", got.DataVolumeTemplates[0].Name)
	}
	if tpl.DataVolumeTemplates[0].Name != "root" || tpl.Template.Spec.Volumes[2].CloudInitNoCloud.UserDataSecretRef.Name != "userdata" {
		t.Error("PoolVMSpec changed the pool's template")
	}

	vm := NewVMFromPool(p, 2, "web-7")
	if vm.Name != "web-2" || vm.Labels[virtv1.VirtualMachinePoolRevisionName] != "web-7" ||
		vm.Spec.Template.ObjectMeta.Labels[virtv1.VirtualMachinePoolRevisionName] != "web-7" ||
		vm.Finalizers[0] != poolv1.VirtualMachinePoolControllerFinalizer || *vm.OwnerReferences[0].Controller != true ||
		vm.OwnerReferences[0].Kind != "VirtualMachinePool" || vm.OwnerReferences[0].APIVersion != "pool.kubevirt.io/v1beta1" {
		t.Errorf("VM %+v", vm.ObjectMeta)
	}
	if _, ok := p.Spec.VirtualMachineTemplate.ObjectMeta.Labels[virtv1.VirtualMachinePoolRevisionName]; ok {
		t.Error("NewVMFromPool labelled the pool's template")
	}
}

func TestPoolNamesAndMaxUnavailable(t *testing.T) {
	for name, want := range map[string]int{"web-0": 0, "web-12": 12, "web-01": -1, "web-x": -1, "webby-1": -1, "web--1": -1} {
		i, ok := PoolIndex("web", name)
		if (want >= 0) != ok || (ok && i != want) {
			t.Errorf("PoolIndex(web, %s) = %d, %v; want %d", name, i, ok, want)
		}
	}
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(n int) *intstr.IntOrString { v := intstr.FromInt32(int32(n)); return &v }
	for _, c := range []struct {
		v        *intstr.IntOrString
		replicas int32
		want     int
	}{{nil, 4, 4}, {nil, 0, 1}, {pct("50%"), 5, 2}, {pct("10%"), 3, 1}, {num(2), 9, 2}, {num(0), 9, 1}} {
		if got, err := MaxUnavailable(c.v, c.replicas); err != nil || got != c.want {
			t.Errorf("MaxUnavailable(%v, %d) = %d, %v; want %d", c.v, c.replicas, got, err, c.want)
		}
	}
	if _, err := MaxUnavailable(pct("150%"), 3); err == nil {
		t.Error("150% accepted")
	}
}
