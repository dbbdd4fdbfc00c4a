package smoke

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
)

// A VirtualMachine manifest of the kind KubeVirt's users apply is stored by the
// real apiserver and read back with its spec intact: the CRD's structural
// schema prunes none of its fields.
func TestVirtualMachineRoundTrip(t *testing.T) {
	cp := kubeenv.ControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	raw, err := os.ReadFile("testdata/vm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var vm virtv1.VirtualMachine
	if err := yaml.UnmarshalStrict(raw, &vm); err != nil {
		t.Fatal(err)
	}
	vm.Namespace = "default"
	want := vm.DeepCopy()
	if err := cp.Client.Create(ctx, &vm); err != nil {
		t.Fatalf("create VirtualMachine: %v", err)
	}

	var got virtv1.VirtualMachine
	if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "smoke"}, &got); err != nil {
		t.Fatalf("get VirtualMachine: %v", err)
	}
	if diff := cmp.Diff(want.Spec, got.Spec); diff != "" {
		t.Errorf("spec changed on the round trip (-sent +stored):\n%s", diff)
	}
	if diff := cmp.Diff(want.Labels, got.Labels); diff != "" {
		t.Errorf("labels changed on the round trip (-sent +stored):\n%s", diff)
	}
	if got.UID == "" || got.Generation != 1 {
		t.Errorf("stored object has uid %q generation %d, want a uid and generation 1", got.UID, got.Generation)
	}

	// The status subresource is separate from the spec, as in KubeVirt.
	got.Status.PrintableStatus = virtv1.VirtualMachineStatusStopped
	if err := cp.Client.Status().Update(ctx, &got); err != nil {
		t.Fatalf("update status: %v", err)
	}
	var again virtv1.VirtualMachine
	if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(&got), &again); err != nil {
		t.Fatal(err)
	}
	if again.Status.PrintableStatus != virtv1.VirtualMachineStatusStopped || again.Generation != 1 {
		t.Errorf("after a status update: printableStatus %q generation %d, want %q and 1",
			again.Status.PrintableStatus, again.Generation, virtv1.VirtualMachineStatusStopped)
	}
}

// The CRDs carry KubeVirt's short names and printer columns.
func TestCRDNames(t *testing.T) {
	cp := kubeenv.ControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: "virtualmachineinstances.kubevirt.io"}, &crd); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"vmi", "vmis"}, crd.Spec.Names.ShortNames); diff != "" {
		t.Errorf("short names (-want +got):\n%s", diff)
	}
	var cols []string
	for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
		cols = append(cols, c.Name)
	}
	if diff := cmp.Diff([]string{"Age", "Phase", "IP", "NodeName", "Ready", "Live-Migratable"}, cols); diff != "" {
		t.Errorf("printer columns (-want +got):\n%s", diff)
	}
}
