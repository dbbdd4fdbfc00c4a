package main

import "testing"

func TestSplitImage(t *testing.T) {
	for _, tc := range []struct{ image, registry, tag, err string }{
		{"registry.example/virtkit/virt-operator:v1", "registry.example/virtkit", "v1", ""},
		{"127.0.0.1:5000/virtkit/virt-operator@sha256:abc", "127.0.0.1:5000/virtkit", "sha256:abc", ""},
		{"virt-operator:v1", "", "", `--image "virt-operator:v1": want REGISTRY/virt-operator:TAG`},
		{"registry.example/virt-operator", "", "", `--image "registry.example/virt-operator": want REGISTRY/virt-operator:TAG`},
	} {
		reg, tag, err := splitImage(tc.image)
		if reg != tc.registry || tag != tc.tag || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("splitImage(%q) = %q, %q, %v; want %q, %q, %q", tc.image, reg, tag, err, tc.registry, tc.tag, tc.err)
		}
	}
}
