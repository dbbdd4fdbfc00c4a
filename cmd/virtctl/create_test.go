package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clonev1 "kubevirt.io/api/clone/v1beta1"
	virtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit/virt/clone"
	"github.com/virtkit/virtkit/virt/spec"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// `create vm` prints KubeVirt's manifest for its flags; every golden
// manifest passes virtkit's VM admission (defaulting, then validation), and
// so does the VMI it yields.
func TestCreateVMGolden(t *testing.T) {
	userData := "I2Nsb3VkLWNvbmZpZwpob3N0bmFtZTogdGlueQo=" // #cloud-config\nhostname: tiny\n
	cases := []struct{ golden, args string }{
		{"defaults", "create vm"},
		{"containerdisk-cloudinit", "create vm --name=tiny --memory=128Mi --volume-containerdisk=src:localhost:5000/virtkit/test-guest:latest --cloud-init-user-data=" + userData},
		{"instancetype-preference-pvc", "create vm --name=db --instancetype=u1.medium --preference=virtualmachinepreference/fedora --volume-pvc=src:db-root --run-strategy=Manual --termination-grace-period=30"},
		{"boot-order", "create vm --name=two --volume-containerdisk=src:registry.example/a:1,name:a,bootorder:2 --volume-pvc=src:b,bootorder:1"},
		{"volume-import", "create vm --name=web --volume-import=type:ds,src:vms/fedora,size:10Gi,bootorder:1 --volume-import=type:http,url:https://images.example.com/data.qcow2,size:1Gi,name:data,certconfigmap:ca " +
			"--volume-import=type:pvc,src:vms/golden,name:golden-copy --volume-import=type:registry,url:docker://quay.io/containerdisks/fedora:41,size:5Gi,name:reg --volume-import=type:blank,size:2Gi,name:scratch"},
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			h := newHarness(t, "")
			if code := h.run(strings.Fields(c.args)...); code != 0 {
				t.Fatalf("exit %d: %s", code, h.stderr)
			}
			got := h.stdout.String()
			assertGolden(t, filepath.Join("testdata", "create-vm", c.golden+".yaml"), got)
			vm := &virtv1.VirtualMachine{}
			if err := yaml.UnmarshalStrict([]byte(got), vm); err != nil {
				t.Fatal(err)
			}
			spec.DefaultVM(vm)
			if errs := spec.ValidateVM(vm); len(errs) > 0 {
				t.Errorf("virtkit's VM admission refuses it: %v", errs.ToAggregate())
			}
			if vm.Spec.Instancetype != nil {
				return // its VMI needs the instancetype object
			}
			vmi := spec.NewVMIFromVM(vm)
			spec.DefaultVMI(vmi)
			if errs := spec.ValidateVMI(vmi); len(errs) > 0 {
				t.Errorf("virtkit's VMI admission refuses the VMI it yields: %v", errs.ToAggregate())
			}
		})
	}
}

func TestCreateVMErrors(t *testing.T) {
	cases := []struct{ args, stderr string }{
		{"create vmi", `unknown resource "vmi": virtctl create makes vm, instancetype, preference or clone manifests`},
		{"create", "'virtctl create' needs what to create: vm, instancetype, preference or clone"},
		{"create clone", "--source-name: required"},
		{"create clone --source-name=a --source-type=pod", `--source-type: "pod" is not supported (vm, vmsnapshot)`},
		{"create clone --source-name=a --target-type=vmsnapshot", `--target-type: "vmsnapshot" is not supported (vm)`},
		{"create clone --source-name=a --new-mac-address=02-00-00-00-00-01", `--new-mac-address "02-00-00-00-00-01": want INTERFACE:MAC`},
		{"create instancetype --cpu=2", "--cpu and --memory are required"},
		{"create instancetype --cpu=0 --memory=1Gi", "--cpu: must be greater than zero"},
		{"create instancetype --cpu=1 --memory=1Gi --iothreadspolicy=dedicated", `--iothreadspolicy "dedicated": must be auto or shared`},
		{"create instancetype --cpu=1 --memory=1Gi --gpu=name:g", "--gpu=name:g: devicename must be specified"},
		{"create preference --cpu-topology=cubes", `--cpu-topology "cubes": must be sockets, cores, threads, spread or any`},
		{"create vm --run-strategy=Sometimes", `--run-strategy: invalid RunStrategy "Sometimes", supported values are: Always, Manual, Halted, Once, RerunOnFailure`},
		{"create vm --instancetype=u1.small --memory=1Gi", "--memory and --instancetype exclude each other: the instancetype sets the memory"},
		{"create vm --instancetype=pod/x", `--instancetype: invalid kind "pod", supported values are: virtualmachineinstancetype, virtualmachineclusterinstancetype`},
		{"create vm --memory=lots", `--memory "lots": quantities must match the regular expression`},
		{"create vm --volume-containerdisk=name:x", "--volume-containerdisk=name:x: src must be specified"},
		{"create vm --volume-containerdisk=image:x", `--volume-containerdisk=image:x: unknown key "image" (keys src, name, bootorder)`},
		{"create vm --volume-pvc=src:ns/claim", `--volume-pvc: not allowed to specify namespace of pvc "ns/claim"`},
		{"create vm --volume-pvc=src:a,bootorder:0", "--volume-pvc=src:a,bootorder:0: bootorder must be a number greater than 0"},
		{"create vm --volume-pvc=src:a,bootorder:1 --volume-pvc=src:b,bootorder:1", "--volume-pvc: bootorder 1 is given to a already"},
		{"create vm --volume-pvc=src:a --volume-pvc=src:a", `--volume-pvc: there is already a Volume with name "a"`},
		{"create vm --volume-import=type:s3,url:s3://b/k,size:1Gi", `--volume-import=type:s3,url:s3://b/k,size:1Gi: invalid volume import type "s3", supported values are: blank, ds, http, pvc, registry`},
		{"create vm --volume-import=type:http,size:1Gi", "--volume-import=type:http,size:1Gi: url is required with http volume source"},
		{"create vm --volume-import=type:http,url:https://x/y", "--volume-import=type:http,url:https://x/y: size must be specified for type http"},
		{"create vm --volume-import=type:pvc,src:golden", `--volume-import=type:pvc,src:golden: namespace of pvc "golden" must be specified`},
		{"create vm --volume-import=type:blank,size:1Gi,src:x", `--volume-import=type:blank,size:1Gi,src:x: unknown key "src" for type blank`},
		{"create vm --volume-import=type:blank,size:1Gi,name:Big", `--volume-import=type:blank,size:1Gi,name:Big: invalid name "Big"`},
		{"create vm --cloud-init-user-data=#cloud-config", "--cloud-init-user-data is not base64 (encode the file with `base64 -w0 FILE`)"},
	}
	for _, c := range cases {
		t.Run(c.args, func(t *testing.T) {
			h := newHarness(t, "")
			if code := h.run(strings.Fields(c.args)...); code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if !strings.HasPrefix(h.stderr.String(), "Error: "+c.stderr) {
				t.Errorf("stderr %q\nwant it to start with %q", h.stderr, "Error: "+c.stderr)
			}
			if h.stdout.String() != "" {
				t.Errorf("stdout %q", h.stdout)
			}
		})
	}
}

// `create instancetype` and `create preference` print KubeVirt's manifests
// for their flags; each golden decodes strictly, and a VM naming it expands
// without conflicts.
func TestCreateInstancetypeAndPreferenceGolden(t *testing.T) {
	cases := []struct{ golden, args string }{
		{"instancetype-cluster", "create instancetype --cpu=2 --memory=256Mi"},
		{"instancetype-namespaced", "-n team create instancetype --name=small --cpu=1 --memory=128Mi --iothreadspolicy=shared --hostdevice=name:nic,devicename:example.com/nic"},
		{"preference-cluster", "create preference --cpu-topology=spread --machine-type=q35 --volume-storage-class=local"},
		{"preference-namespaced", "create preference --namespaced --name=linux"},
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			h := newHarness(t, "")
			if code := h.run(strings.Fields(c.args)...); code != 0 {
				t.Fatalf("exit %d: %s", code, h.stderr)
			}
			got := h.stdout.String()
			assertGolden(t, filepath.Join("testdata", "create", c.golden+".yaml"), got)
			var it *instancetypev1beta1.VirtualMachineInstancetypeSpec
			var pref *instancetypev1beta1.VirtualMachinePreferenceSpec
			switch {
			case strings.Contains(c.golden, "instancetype-cluster"):
				o := &instancetypev1beta1.VirtualMachineClusterInstancetype{}
				must(t, yaml.UnmarshalStrict([]byte(got), o))
				it = &o.Spec
			case strings.Contains(c.golden, "instancetype"):
				o := &instancetypev1beta1.VirtualMachineInstancetype{}
				must(t, yaml.UnmarshalStrict([]byte(got), o))
				it = &o.Spec
			case strings.Contains(c.golden, "preference-cluster"):
				o := &instancetypev1beta1.VirtualMachineClusterPreference{}
				must(t, yaml.UnmarshalStrict([]byte(got), o))
				pref = &o.Spec
			default:
				o := &instancetypev1beta1.VirtualMachinePreference{}
				must(t, yaml.UnmarshalStrict([]byte(got), o))
				pref = &o.Spec
			}
			vmi := virtv1.VirtualMachineInstanceSpec{}
			if errs := spec.ApplyInstancetype(&vmi, field.NewPath("spec", "template", "spec"), it, pref); len(errs) > 0 {
				t.Errorf("a VM naming it does not expand: %v", errs.ToAggregate())
			}
		})
	}
}

// `create clone` prints KubeVirt's manifest for its flags; each golden
// decodes strictly and, once the webhook names its target, passes
// virtkit's clone admission.
func TestCreateCloneGolden(t *testing.T) {
	cases := []struct{ golden, args string }{
		{"clone-vm", "-n team create clone --name=db-copy --source-name=db --target-name=db-2"},
		{"clone-snapshot", "create clone --name=from-monday --source-type=vmsnapshot --source-name=db-monday --label-filter=* --label-filter=!example.com/* " +
			"--annotation-filter=note --template-label-filter=app --template-annotation-filter=* --new-mac-address=default:02:00:00:00:00:22 --new-smbios-serial=s-2"},
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			h := newHarness(t, "")
			if code := h.run(strings.Fields(c.args)...); code != 0 {
				t.Fatalf("exit %d: %s", code, h.stderr)
			}
			got := h.stdout.String()
			assertGolden(t, filepath.Join("testdata", "create", c.golden+".yaml"), got)
			o := &clonev1.VirtualMachineClone{}
			must(t, yaml.UnmarshalStrict([]byte(got), o))
			clone.Default(o, "x2z4b")
			if errs := clone.Validate(o); len(errs) > 0 {
				t.Errorf("virtkit's clone admission refuses it: %v", errs.ToAggregate())
			}
		})
	}
}

// assertGolden compares got with the golden file at path, which -update
// rewrites.
func assertGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}
