package deploy_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit/virt/spec"
)

// The common instancetypes manifest holds KubeVirt's u1, o1, cx1 and m1
// series under their names, and a VM naming any of them is a valid VM.
func TestCommonInstancetypes(t *testing.T) {
	b, err := os.ReadFile("instancetypes/common-clusterinstancetypes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, doc := range bytes.Split(b, []byte("\n---\n"))[1:] {
		it := &instancetypev1beta1.VirtualMachineClusterInstancetype{}
		if err := yaml.UnmarshalStrict(doc, it); err != nil {
			t.Fatalf("%v in:\n%s", err, doc)
		}
		if seen[it.Name] {
			t.Errorf("%s twice", it.Name)
		}
		seen[it.Name] = true
		vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "default"},
			Spec: virtv1.VirtualMachineSpec{RunStrategy: new(virtv1.RunStrategyAlways), Instancetype: &virtv1.InstancetypeMatcher{Name: it.Name},
				Template: &virtv1.VirtualMachineInstanceTemplateSpec{Spec: virtv1.VirtualMachineInstanceSpec{
					Volumes: []virtv1.Volume{{Name: "root", VolumeSource: virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "example/guest:1"}}}}}}}}
		spec.DefaultVM(vm)
		errs := spec.ValidateVM(vm, spec.WithInstancetype(&it.Spec))
		if len(errs) > 0 {
			t.Errorf("a VM of %s: %v", it.Name, errs.ToAggregate())
		}
		if q := it.Spec.Memory.Guest; strings.HasPrefix(it.Name, "m1.") && q.Cmp(*resource.NewQuantity(int64(it.Spec.CPU.Guest)*8<<30, resource.BinarySI)) != 0 {
			t.Errorf("%s: %s for %d vCPUs, want 8Gi each", it.Name, q.String(), it.Spec.CPU.Guest)
		}
	}
	for _, name := range []string{"u1.nano", "u1.2xmedium", "u1.8xlarge", "o1.medium", "cx1.large", "cx1.large1gi", "m1.xlarge", "m1.8xlarge1gi"} {
		if !seen[name] {
			t.Errorf("no %s", name)
		}
	}
	if len(seen) != 41 {
		t.Errorf("%d instancetypes, want 41 (u1 10, o1 9, cx1 12, m1 10)", len(seen))
	}
}
