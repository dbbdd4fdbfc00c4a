package main

import (
	"os"
	"testing"
)

// The ready file records the kubeconfig, the registry's and the metrics'
// addresses; status and up read them back.
func TestReadyFileAddresses(t *testing.T) {
	for _, tc := range []struct {
		name, file, registry, metrics string
	}{
		{"all three", "/d/kubeconfig\n127.0.0.1:5000\n127.0.0.1:41234\n", "127.0.0.1:5000", "127.0.0.1:41234"},
		{"metrics off", "/d/kubeconfig\n127.0.0.1:5000\n\n", "127.0.0.1:5000", ""},
		{"written by an older virt-local", "/d/kubeconfig\n127.0.0.1:5000\n", "127.0.0.1:5000", ""},
		{"not ready", "", "127.0.0.1:5999", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := defaultOptions()
			o.dataDir, o.registryAddr = t.TempDir(), "127.0.0.1:5999"
			if tc.file != "" {
				if err := os.WriteFile(o.readyFile(), []byte(tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := o.registry(); got != tc.registry {
				t.Errorf("registry %q, want %q", got, tc.registry)
			}
			if got := o.metrics(); got != tc.metrics {
				t.Errorf("metrics %q, want %q", got, tc.metrics)
			}
		})
	}
}
