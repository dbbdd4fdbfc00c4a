package cdiresource

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	sdkapi "kubevirt.io/controller-lifecycle-operator-sdk/api"
)

func cdiAt(name string, minute int, phase sdkapi.Phase) cdiv1.CDI {
	c := cdiv1.CDI{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Date(2026, 12, 7, 10, minute, 0, 0, time.UTC))}}
	c.Status.Phase = phase
	return c
}

func TestActive(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cdis      []cdiv1.CDI
		want      string
		wantExtra []string
	}{
		{"none", nil, "", nil},
		{"one", []cdiv1.CDI{cdiAt("cdi", 1, "")}, "cdi", nil},
		{"the oldest", []cdiv1.CDI{cdiAt("b", 2, ""), cdiAt("a", 1, sdkapi.PhaseDeployed)}, "a", []string{"b"}},
		{"the name breaks a tie", []cdiv1.CDI{cdiAt("b", 1, ""), cdiAt("a", 1, "")}, "a", []string{"b"}},
		{"not one in Error", []cdiv1.CDI{cdiAt("old", 1, sdkapi.PhaseError), cdiAt("new", 2, sdkapi.PhaseDeployed)}, "new", []string{"old"}},
		{"all in Error: the oldest", []cdiv1.CDI{cdiAt("b", 2, sdkapi.PhaseError), cdiAt("a", 1, sdkapi.PhaseError)}, "a", []string{"b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			active, extra := Active(tc.cdis)
			got := ""
			if active != nil {
				got = active.Name
			}
			var gotExtra []string
			for _, e := range extra {
				gotExtra = append(gotExtra, e.Name)
			}
			if got != tc.want || !cmp.Equal(gotExtra, tc.wantExtra) {
				t.Errorf("Active = %q, extra %q; want %q, %q", got, gotExtra, tc.want, tc.wantExtra)
			}
		})
	}
}

func TestConfigSpec(t *testing.T) {
	c := &cdiv1.CDI{Spec: cdiv1.CDISpec{Config: &cdiv1.CDIConfigSpec{InsecureRegistries: []string{"r:5000"}}}}
	if _, ok := ConfigSpec(c); ok {
		t.Errorf("ConfigSpec of a resource without %s: ok", AnnConfigAuthority)
	}
	c.Annotations = map[string]string{AnnConfigAuthority: ""}
	spec, ok := ConfigSpec(c)
	if diff := cmp.Diff(*c.Spec.Config, spec); !ok || diff != "" {
		t.Errorf("ConfigSpec: ok %v, (-want +got):\n%s", ok, diff)
	}
	spec.InsecureRegistries[0] = "changed"
	if c.Spec.Config.InsecureRegistries[0] != "r:5000" {
		t.Errorf("ConfigSpec shares the resource's slices")
	}
	c.Spec.Config = nil
	if spec, ok := ConfigSpec(c); !ok || !cmp.Equal(spec, cdiv1.CDIConfigSpec{}) {
		t.Errorf("ConfigSpec without spec.config = %+v, %v; want an empty spec", spec, ok)
	}
}
