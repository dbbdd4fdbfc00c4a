package cdiresource

import (
	"fmt"
	"testing"
	"time"

	conditionsv1 "github.com/openshift/custom-resource-status/conditions/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	sdkapi "kubevirt.io/controller-lifecycle-operator-sdk/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/cdiconfig"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
)

// TestController: on a real apiserver with virtkit's CRDs, next to the
// CDIConfig controller, a CDIConfig configured before the CDI resource
// existed is carried into the one made; from then on the CDI resource's
// spec.config is the CDIConfig's spec (a direct edit is put back); a
// second resource is put in phase Error; when the first goes, the second
// takes over with the configuration; the clone strategy override is read
// from the active one.
func TestController(t *testing.T) {
	env := kubeenv.ControlPlane(t)
	ctx := testenv.Within(t, 2*time.Minute)
	// Configured before virtkit knew of CDI resources.
	pre := &cdiv1.CDIConfig{ObjectMeta: metav1.ObjectMeta{Name: cdiconfig.Name},
		Spec: cdiv1.CDIConfigSpec{InsecureRegistries: []string{"registry.lab:5000"}, FeatureGates: cdiconfig.DefaultFeatureGates()}}
	if err := env.Client.Create(ctx, pre); err != nil {
		t.Fatal(err)
	}
	mgr := kubeenv.NewManager(t, env)
	if err := cdiconfig.New().SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(100)
	if err := New(WithEventRecorder(rec)).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	kubeenv.RunManager(t, mgr)

	get := func(name string) (*cdiv1.CDI, string) {
		c := &cdiv1.CDI{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
			return nil, err.Error()
		}
		return c, fmt.Sprintf("annotations %v, spec.config %+v, status %+v", c.Annotations, c.Spec.Config, c.Status)
	}
	deployed := func(name string) func() (bool, string) {
		return func() (bool, string) {
			c, s := get(name)
			return c != nil && c.Status.Phase == sdkapi.PhaseDeployed && conditionsv1.IsStatusConditionTrue(c.Status.Conditions, conditionsv1.ConditionAvailable), s
		}
	}
	cfgSpec := func(want cdiv1.CDIConfigSpec) func() (bool, string) {
		return func() (bool, string) {
			cfg := &cdiv1.CDIConfig{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: cdiconfig.Name}, cfg); err != nil {
				return false, err.Error()
			}
			return equality.Semantic.DeepEqual(cfg.Spec, want), fmt.Sprintf("%+v", cfg.Spec)
		}
	}

	testenv.Eventually(ctx, t, "CDI "+DefaultName+" made and Deployed", deployed(DefaultName))
	c, _ := get(DefaultName)
	if _, ok := c.Annotations[AnnConfigAuthority]; !ok || c.Spec.Config == nil || !equality.Semantic.DeepEqual(*c.Spec.Config, pre.Spec) {
		t.Fatalf("CDI %s: annotations %v, spec.config %+v; want %s and the CDIConfig's spec %+v", DefaultName, c.Annotations, c.Spec.Config, AnnConfigAuthority, pre.Spec)
	}

	// Configured through the CDI resource, as CDI's documentation says.
	want := *c.Spec.Config.DeepCopy()
	want.InsecureRegistries = append(want.InsecureRegistries, "other.lab:5000")
	override := cdiv1.CloneStrategyHostAssisted
	c.Spec.Config, c.Spec.CloneStrategyOverride = want.DeepCopy(), &override
	if err := env.Client.Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(ctx, t, "the CDIConfig's spec follows spec.config", cfgSpec(want))
	if got, err := CloneStrategyOverride(ctx, env.Client); err != nil || got == nil || *got != override {
		t.Errorf("CloneStrategyOverride = %v, %v; want %s", got, err, override)
	}

	// A direct edit of the CDIConfig is put back.
	cfg := &cdiv1.CDIConfig{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: cdiconfig.Name}, cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Spec.InsecureRegistries = nil
	if err := env.Client.Update(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(ctx, t, "the CDIConfig edited directly put back", cfgSpec(want))

	// A second resource is unwanted.
	second := &cdiv1.CDI{ObjectMeta: metav1.ObjectMeta{Name: "second"}, Spec: cdiv1.CDISpec{Config: &cdiv1.CDIConfigSpec{}}}
	if err := env.Client.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(ctx, t, "the second resource in phase Error", func() (bool, string) {
		c, s := get("second")
		return c != nil && c.Status.Phase == sdkapi.PhaseError && conditionsv1.IsStatusConditionTrue(c.Status.Conditions, conditionsv1.ConditionDegraded) &&
			conditionsv1.FindStatusCondition(c.Status.Conditions, conditionsv1.ConditionDegraded).Reason == ReasonConfigError, s
	})
	if ok, s := cfgSpec(want)(); !ok {
		t.Errorf("the second resource changed the CDIConfig: %s", s)
	}
	if ok, s := deployed(DefaultName)(); !ok {
		t.Errorf("CDI %s no longer Deployed: %s", DefaultName, s)
	}

	// The first goes: the second, in Error, is the only one and takes over.
	// It has a spec.config of its own (empty), which then rules.
	if err := env.Client.Delete(ctx, &cdiv1.CDI{ObjectMeta: metav1.ObjectMeta{Name: DefaultName}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(ctx, t, "the second resource Deployed", deployed("second"))
	testenv.Eventually(ctx, t, "the CDIConfig's spec is the second's", cfgSpec(cdiv1.CDIConfigSpec{}))
	if got, err := CloneStrategyOverride(ctx, env.Client); err != nil || got != nil {
		t.Errorf("CloneStrategyOverride = %v, %v; want none", got, err)
	}
	if c, _ := get(DefaultName); c != nil {
		t.Errorf("CDI %s made again while another exists", DefaultName)
	}

	// The last one goes: one is made again, from the CDIConfig's spec
	// (empty now, so with the released resource's feature gates).
	if err := env.Client.Delete(ctx, &cdiv1.CDI{ObjectMeta: metav1.ObjectMeta{Name: "second"}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(ctx, t, "CDI "+DefaultName+" made again", deployed(DefaultName))
	testenv.Eventually(ctx, t, "the CDIConfig's spec is the new resource's", cfgSpec(cdiv1.CDIConfigSpec{FeatureGates: cdiconfig.DefaultFeatureGates()}))
	events := drain(rec)
	for _, want := range []string{corev1.EventTypeNormal + " " + ReasonDeployCompleted, corev1.EventTypeWarning + " " + ReasonConfigError} {
		if !containsPrefix(events, want) {
			t.Errorf("events %q: none %q", events, want)
		}
	}
}

func drain(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func containsPrefix(events []string, prefix string) bool {
	for _, e := range events {
		if len(e) >= len(prefix) && e[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}
