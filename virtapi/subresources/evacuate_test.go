package subresources_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virtapi/eviction"
	"github.com/virtkit/virtkit/virtapi/subresources"
)

// evacuatecancel clears a drain's mark on the VMI, as KubeVirt's does, and
// refuses while the node carries the drain taint the CR names
// (virtapi/eviction.DrainTaint, as virt-api wires it).
func TestEvacuateCancel(t *testing.T) {
	marked := func() *virtv1.VirtualMachineInstance {
		v := vmiObj(virtv1.Running)
		v.Status.EvacuationNodeName = "node-a"
		return v
	}
	node := func(taintKeys ...string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
		for _, k := range taintKeys {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: k, Value: "draining", Effect: corev1.TaintEffectNoSchedule})
		}
		return n
	}
	created := func(yes bool) *virtv1.VirtualMachine {
		vm := vmObj(virtv1.RunStrategyAlways)
		vm.Status.Created = yes
		return vm
	}
	otherKey := "example.com/maintenance"
	cr := &virtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt"},
		Spec: virtv1.KubeVirtSpec{Configuration: virtv1.KubeVirtConfiguration{MigrationConfiguration: &virtv1.MigrationConfiguration{NodeDrainTaintKey: &otherKey}}}}
	for _, tc := range []struct {
		name     string
		objs     []client.Object
		resource string
		body     string
		code     int
		msg      string
		mark     string // the VMI's evacuationNodeName after
	}{
		{"marked", []client.Object{marked(), node()}, "virtualmachineinstances", "", 200, "", ""},
		{"marked, through the VM", []client.Object{marked(), node(), created(true)}, "virtualmachines", "{}", 200, "", ""},
		{"naming the mark", []client.Object{marked(), node()}, "virtualmachineinstances", `{"evacuationNodeName":"node-a"}`, 200, "", ""},
		{"not marked", []client.Object{vmiObj(virtv1.Running), node()}, "virtualmachineinstances", "", 200, "", ""},
		{"dry run", []client.Object{marked(), node()}, "virtualmachineinstances", `{"dryRun":["All"]}`, 200, "", "node-a"},
		{"drain taint", []client.Object{marked(), node("kubevirt.io/drain")}, "virtualmachineinstances", "", 400,
			`Node \"node-a\" has NodeDrainTaintKey \"kubevirt.io/drain:NoSchedule\"`, "node-a"},
		{"drain taint, not marked", []client.Object{vmiObj(virtv1.Running), node("kubevirt.io/drain")}, "virtualmachineinstances", "", 400,
			"has NodeDrainTaintKey", ""},
		{"the CR's key", []client.Object{marked(), node(otherKey), cr}, "virtualmachineinstances", "", 400, "example.com/maintenance:NoSchedule", "node-a"},
		{"another key than the CR's", []client.Object{marked(), node("kubevirt.io/drain"), cr}, "virtualmachineinstances", "", 200, "", ""},
		{"naming another node", []client.Object{marked(), node()}, "virtualmachineinstances", `{"evacuationNodeName":"node-x"}`, 409, "not node-x", "node-a"},
		{"VM not started", []client.Object{marked(), node(), created(false)}, "virtualmachines", "", 409, "VMI is not started", "node-a"},
		{"bad body", []client.Object{marked(), node()}, "virtualmachineinstances", `{"dryRun":`, 400, "v1.EvacuateCancelOptions", "node-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme.New()).
				WithStatusSubresource(&virtv1.VirtualMachine{}, &virtv1.VirtualMachineInstance{}).WithObjects(tc.objs...).Build()
			h := subresources.New(c, subresources.WithAuthenticator(anyone{}), subresources.WithAuthorizer(allowAll{}),
				subresources.WithDrainTaint(func(ctx context.Context, node string) (string, error) {
					return eviction.DrainTaint(ctx, c, "", node)
				}))
			rec := serve(h, "PUT", subresources.Prefix+"/namespaces/ns/"+tc.resource+"/vm/evacuatecancel", tc.body)
			if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.msg) {
				t.Errorf("%d %s, want %d %q", rec.Code, rec.Body, tc.code, tc.msg)
			}
			v := &virtv1.VirtualMachineInstance{}
			must(t, c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "vm"}, v))
			if v.Status.EvacuationNodeName != tc.mark {
				t.Errorf("evacuationNodeName %q, want %q", v.Status.EvacuationNodeName, tc.mark)
			}
		})
	}
}
