package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// Every example manifest converts to a domain that libvirt's own schema
// accepts, or, for the invalid one, is refused with each field named.
func TestExampleManifests(t *testing.T) {
	manifests, err := filepath.Glob("../manifests/*.yaml")
	assert.NilError(t, err)
	assert.Assert(t, len(manifests) >= 4)
	for _, m := range manifests {
		t.Run(filepath.Base(m), func(t *testing.T) {
			f, err := os.Open(m)
			assert.NilError(t, err)
			defer f.Close()
			xml, err := convert(f, true)
			if strings.Contains(m, "invalid") {
				assert.Assert(t, err != nil)
				for _, want := range []string{
					"not implemented yet: spec.domain.devices.interfaces[0].sriov",
					`spec.domain.devices.disks[0].disk.bus: Unsupported value: "floppy"`,
					`spec.domain.devices.disks[0].name: Not found: "rootdisk"`,
				} {
					assert.Check(t, is.Contains(err.Error(), want))
				}
				return
			}
			assert.NilError(t, err)
			assert.Check(t, strings.HasPrefix(xml, `<domain type="qemu">`), "emulation asked for: %.40s", xml)
			validate(t, xml)
		})
	}
}

func TestRejectsOtherKinds(t *testing.T) {
	_, err := convert(strings.NewReader("apiVersion: v1\nkind: Pod\n"), false)
	assert.ErrorContains(t, err, `apiVersion "v1"`)
	_, err = convert(strings.NewReader("apiVersion: kubevirt.io/v1\nkind: KubeVirt\n"), false)
	assert.ErrorContains(t, err, `kind "KubeVirt"`)
	_, err = convert(strings.NewReader("apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nspec:\n  runStrategy: Always\n  bogus: 1\n"), false)
	assert.ErrorContains(t, err, "bogus")
}

// validate runs libvirt's schema validator on xml.
func validate(t *testing.T, xml string) {
	t.Helper()
	if testing.Short() {
		return
	}
	path := filepath.Join(t.TempDir(), "domain.xml")
	assert.NilError(t, os.WriteFile(path, []byte(xml), 0o644))
	out, err := exec.Command("virt-xml-validate", path, "domain").CombinedOutput()
	assert.NilError(t, err, "virt-xml-validate: %s", out)
}
