package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// `expand --vm` asks for the stored VM, `expand --file` sends the manifest,
// both in the namespace of -n or the kubeconfig, and print the answer.
func TestExpand(t *testing.T) {
	h := newHarness(t, "team")
	if code := h.run("expand", "--vm", "sized"); code != 0 {
		t.Fatalf("exit %d: %s", code, h.stderr)
	}
	got := &virtv1.VirtualMachine{}
	if err := yaml.UnmarshalStrict([]byte(h.stdout.String()), got); err != nil || got.Labels["expanded"] != "yes" || got.Namespace != "team" {
		t.Errorf("expand --vm printed %q (%v)", h.stdout, err)
	}

	manifest := filepath.Join(t.TempDir(), "vm.yaml")
	if err := os.WriteFile(manifest, []byte("apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: new\nspec:\n  instancetype:\n    name: u1.small\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h = newHarness(t, "team")
	if code := h.run("-n", "other", "expand", "--file", manifest, "-o", "json"); code != 0 {
		t.Fatalf("exit %d: %s", code, h.stderr)
	}
	if !strings.HasPrefix(h.stdout.String(), "{") || !strings.Contains(h.stdout.String(), `"expanded": "yes"`) {
		t.Errorf("expand --file -o json printed %q", h.stdout)
	}
	want := []call{{"ExpandVMSpec", "other", "new", virtv1.VirtualMachineSpec{Instancetype: &virtv1.InstancetypeMatcher{Name: "u1.small"}}}}
	if d := cmp.Diff(want, h.api.calls, cmp.AllowUnexported(call{})); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}

	for _, c := range []struct{ args, stderr string }{
		{"expand", "give one of --vm and --file"},
		{"expand --vm a --file b", "give one of --vm and --file"},
		{"expand --vm a -o xml", `--output "xml": yaml or json`},
		{"expand --file /nonexistent/vm.yaml", "--file: open /nonexistent/vm.yaml"},
		{"expand --file " + manifest + "x", "--file: open"},
	} {
		h := newHarness(t, "team")
		if code := h.run(strings.Fields(c.args)...); code != 1 || !strings.HasPrefix(h.stderr.String(), "Error: "+c.stderr) {
			t.Errorf("%s: exit %d, stderr %q; want 1 and %q", c.args, code, h.stderr, c.stderr)
		}
	}
}
