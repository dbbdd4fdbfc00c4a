package smoke

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	virtv1 "kubevirt.io/api/core/v1"
	poolv1 "kubevirt.io/api/pool/v1beta1"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
)

// Every VMI of the converter's golden cases (58 manifests that together use
// most of the VMI spec) and every example manifest (VMs, VMIs, a replica
// set, a pool) is stored by the real apiserver and read back unchanged: the
// CRDs' structural schemas prune no field a KubeVirt manifest uses.
func TestCRDsPruneNothing(t *testing.T) {
	cp := kubeenv.ControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "virt", "domain", "testdata", "*.yaml"))
	examples, _ := filepath.Glob(filepath.Join(root, "examples", "manifests", "*.yaml"))
	files = append(files, examples...)
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".host.yaml") || strings.Contains(f, "invalid") {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(raw, []byte("\n---\n")) {
			var meta struct{ APIVersion, Kind string }
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			name := strings.ToLower(strings.TrimSuffix(filepath.Base(f), ".yaml"))
			if i > 0 {
				name += fmt.Sprintf("-%d", i)
			}
			var sent, got client.Object
			var spec func(client.Object) any
			switch {
			case meta.Kind == "VirtualMachine":
				sent, got = &virtv1.VirtualMachine{}, &virtv1.VirtualMachine{}
				spec = func(o client.Object) any { return o.(*virtv1.VirtualMachine).Spec }
			case meta.Kind == "VirtualMachineInstanceReplicaSet":
				sent, got = &virtv1.VirtualMachineInstanceReplicaSet{}, &virtv1.VirtualMachineInstanceReplicaSet{}
				spec = func(o client.Object) any { return o.(*virtv1.VirtualMachineInstanceReplicaSet).Spec }
			case meta.Kind == poolv1.VirtualMachinePoolKind:
				sent, got = &poolv1.VirtualMachinePool{}, &poolv1.VirtualMachinePool{}
				spec = func(o client.Object) any { return o.(*poolv1.VirtualMachinePool).Spec }
			case meta.APIVersion != "" && !strings.Contains(meta.APIVersion, "kubevirt.io"):
				continue // what a manifest brings along (a pool's Secrets)
			default:
				sent, got = &virtv1.VirtualMachineInstance{}, &virtv1.VirtualMachineInstance{}
				spec = func(o client.Object) any { return o.(*virtv1.VirtualMachineInstance).Spec }
			}
			if err := yaml.UnmarshalStrict(doc, sent); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			sent.SetNamespace("default")
			sent.SetName(name)
			sent.SetUID("")
			want := spec(sent)
			if err := cp.Client.Create(ctx, sent); err != nil {
				t.Errorf("%s: create: %v", filepath.Base(f), err)
				continue
			}
			if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(sent), got); err != nil {
				t.Fatalf("%s: get: %v", f, err)
			}
			if diff := cmp.Diff(want, spec(got), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s: spec changed on the round trip (-sent +stored):\n%s", filepath.Base(f), diff)
			}
			n++
		}
	}
	if n < 50 {
		t.Errorf("only %d manifests round-tripped, want at least 50", n)
	}
	t.Logf("%d manifests round-tripped", n)
}
