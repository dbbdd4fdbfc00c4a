package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/internal/testenv"
)

// The PrometheusRule as a cluster operator applies it
// (testdata/prometheusrule.yaml; `go test -update` rewrites it).
func TestPrometheusRuleGolden(t *testing.T) {
	objs, err := deploy.PrometheusRuleObjects(deploy.Alerts{Namespace: "kubevirt", RunbookBase: "https://example.com/runbooks/"})
	assert.NilError(t, err)
	golden.Assert(t, render(t, objs), "prometheusrule.yaml")
	_, err = deploy.PrometheusRuleObjects(deploy.Alerts{})
	assert.ErrorContains(t, err, "Alerts.Namespace: required")
}

// promtool, built from the Prometheus module by `make tools`, checks the
// rules and runs their unit tests (testdata/alerts/tests.yaml): every
// alert fires on its signal and stays quiet without it.
func TestAlertRulesWithPromtool(t *testing.T) {
	promtool := testenv.Output(t, "tools", "promtool")
	if _, err := os.Stat(promtool); err != nil {
		t.Fatalf("%v: run 'make tools'", err)
	}
	groups, err := deploy.AlertRules(deploy.Alerts{Namespace: "kubevirt"})
	assert.NilError(t, err)
	b, err := yaml.Marshal(map[string]any{"groups": groups})
	assert.NilError(t, err)
	dir := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), b, 0o644))
	tests, err := os.ReadFile(filepath.Join("testdata", "alerts", "tests.yaml"))
	assert.NilError(t, err)
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "tests.yaml"), tests, 0o644))

	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "tests.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}

	// Every alert is tested and has a runbook.
	docs, err := os.ReadFile(filepath.Join("..", "docs", "alerts.md"))
	assert.NilError(t, err)
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			if !regexp.MustCompile(`(?m)^## ` + r.Alert + `$`).Match(docs) {
				t.Errorf("docs/alerts.md has no section '## %s'", r.Alert)
			}
			if !regexp.MustCompile(`alertname: ` + r.Alert + `\b`).Match(tests) {
				t.Errorf("testdata/alerts/tests.yaml does not test %s", r.Alert)
			}
		}
	}
	names := map[string]bool{}
	for _, g := range groups {
		for _, r := range g.Rules {
			key := r.Alert + r.Record
			assert.Assert(t, !names[key], "%s defined twice", key)
			names[key] = true
		}
	}
}
