package domain

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestName(t *testing.T) {
	for _, tc := range []struct {
		namespace, name, want string
	}{
		{"default", "vm1", "default_vm1"},
		{"ns", "vm", "ns_vm"},
		{"", "vm", "default_vm"},
		{"team-a", "db.primary", "team-a_db.primary"},
		{"ns", "a_b", "ns_a_b"}, // not a valid VMI name, but Name does not check
	} {
		if d := cmp.Diff(tc.want, Name(tc.namespace, tc.name)); d != "" {
			t.Errorf("Name(%q, %q) (-want +got):\n%s", tc.namespace, tc.name, d)
		}
	}
}

// Convert names the domain by the same rule, so whoever finds a VMI's domain
// by Name finds the one Convert made.
func TestConvertUsesName(t *testing.T) {
	for _, ns := range []string{"ns", ""} {
		vmi := baseVMI()
		vmi.Namespace = ns
		dom, err := Convert(vmi, testHost(vmi))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(Name(ns, "vm"), dom.Name); d != "" {
			t.Errorf("namespace %q: domain name (-Name +Convert):\n%s", ns, d)
		}
	}
}

// The domain of VMI default/vm1.
func ExampleName() {
	fmt.Println(Name("default", "vm1"))
	// Output: default_vm1
}
