package main

import (
	"bytes"
	"testing"
)

// virt-local up's lines sit under their step, however its writes split
// them.
func TestIndent(t *testing.T) {
	var out bytes.Buffer
	in := &indent{w: &out}
	for _, w := range []string{"virt-local: start", "ing\n  starting the registry\n", "", "ready\n"} {
		if n, err := in.Write([]byte(w)); err != nil || n != len(w) {
			t.Fatalf("Write(%q) = %d, %v", w, n, err)
		}
	}
	if want := "  virt-local: starting\n    starting the registry\n  ready\n"; out.String() != want {
		t.Errorf("wrote %q, want %q", out.String(), want)
	}
}
