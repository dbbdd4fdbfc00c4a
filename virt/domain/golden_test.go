package domain

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/golden"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit/virt/network"
	"github.com/virtkit/virtkit/virt/storage"
)

// The golden cases: testdata/NAME.yaml is a VirtualMachineInstance manifest;
// testdata/NAME.host.yaml, when present, holds Host facts laid over the test
// host (see testHost); testdata/NAME.xml is the expected domain. Regenerate
// the XML with
//
//	go test ./virt/domain/ -run TestGolden -update
//
// Every golden XML is also checked by libvirt itself: virt-xml-validate
// against the installed RelaxNG schema, and virsh define on the test driver.

// libvirtRefusals lists the cases libvirt 9.0 is known to refuse, with the
// tool that refuses and a fragment of its message; the test checks that it
// still does, so a libvirt upgrade that lifts a limit is noticed.
var libvirtRefusals = map[string]struct{ tool, msg string }{}

func goldenCases(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, ".host.yaml") {
			continue
		}
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".yaml"))
	}
	return names
}

func loadCase(t testing.TB, name string) (*virtv1.VirtualMachineInstance, Host) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	vmi := &virtv1.VirtualMachineInstance{}
	if err := yaml.UnmarshalStrict(raw, vmi); err != nil {
		t.Fatalf("%s.yaml: %v", name, err)
	}
	host := testHost(vmi)
	if raw, err := os.ReadFile(filepath.Join("testdata", name+".host.yaml")); err == nil {
		// Laid over the test host: maps merge, other fields replace.
		if err := yaml.UnmarshalStrict(raw, &host); err != nil {
			t.Fatalf("%s.host.yaml: %v", name, err)
		}
	} else if !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return vmi, host
}

// testHost is an emulated amd64 host with a storage plan for every disk's
// volume and a network plan for every interface, laid out as KubeVirt's
// launcher lays them out.
func testHost(vmi *virtv1.VirtualMachineInstance) Host {
	h := Host{Arch: "amd64", Emulation: true, Storage: storage.Plan{}, Network: network.Plan{}}
	preview := storage.PreviewPlan(vmi)
	for _, d := range vmi.Spec.Domain.Devices.Disks {
		if p, ok := preview[d.Name]; ok {
			h.Storage[d.Name] = p
		}
	}
	for i, iface := range vmi.Spec.Domain.Devices.Interfaces {
		h.Network[iface.Name] = network.InterfacePlan{
			Interface: iface.Name,
			Binding:   network.BindingMasquerade,
			TapName:   "tap" + strconv.Itoa(i),
			MAC:       fmt.Sprintf("02:00:00:00:00:%02x", i+1),
			MTU:       1500,
		}
	}
	return h
}

func TestGolden(t *testing.T) {
	names := goldenCases(t)
	if len(names) < 40 {
		t.Errorf("want at least 40 golden cases, have %d", len(names))
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			vmi, host := loadCase(t, name)
			dom, err := Convert(vmi, host)
			if err != nil {
				t.Fatalf("Convert: %v", err)
			}
			out, err := dom.Marshal()
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			golden.Assert(t, out+"\n", name+".xml")
		})
	}
}

// TestGoldenLibvirt hands every golden XML to libvirt's own checkers.
func TestGoldenLibvirt(t *testing.T) {
	validate, err1 := exec.LookPath("virt-xml-validate")
	virsh, err2 := exec.LookPath("virsh")
	if err1 != nil || err2 != nil {
		if testing.Short() {
			t.Skip("libvirt's checkers run outside -short only")
		}
		t.Fatal("virt-xml-validate or virsh not installed: run 'make deps' (Debian: libvirt-clients, libxml2-utils)")
	}
	for _, name := range goldenCases(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			file, err := filepath.Abs(filepath.Join("testdata", name+".xml"))
			if err != nil {
				t.Fatal(err)
			}
			refusal, refused := libvirtRefusals[name]
			check := func(tool string, args ...string) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				var out bytes.Buffer
				cmd := exec.CommandContext(ctx, args[0], args[1:]...)
				cmd.Stdout, cmd.Stderr = &out, &out
				err := cmd.Run()
				switch {
				case refused && refusal.tool == tool:
					if err == nil || !strings.Contains(out.String(), refusal.msg) {
						t.Errorf("%s was expected to refuse %s.xml with %q; it said (err %v):\n%s", tool, name, refusal.msg, err, out.String())
					}
				case err != nil:
					t.Errorf("%s refuses %s.xml: %v\n%s", tool, name, err, out.String())
				}
			}
			check("virt-xml-validate", validate, file, "domain")
			check("virsh", virsh, "-q", "-c", "test:///default", "define", file)
		})
	}
}
