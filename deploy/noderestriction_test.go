package deploy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
)

// TestHandlerNodeRestriction plays a node whose virt-handler credentials
// were taken: with the token of the handler's pod on node-a, RBAC lets it
// write Nodes and VMIs, and the installed ValidatingAdmissionPolicy refuses
// every write to node-b and to the VMIs there, while the handler's own
// writes (its Node, the VMIs on node-a, one migrating to node-a) pass. A
// token of the handler's account not bound to a pod on a node writes
// nothing.
func TestHandlerNodeRestriction(t *testing.T) {
	env := kubeenv.ControlPlane(t)
	admin := env.Client
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt"}}))
	objs, err := deploy.HandlerObjects(deploy.Handler{Namespace: "kubevirt", Image: "virt-handler:test", TLSSecret: "virt-handler-certs"})
	must(err)
	must(deploy.Apply(ctx, admin, objs...))
	for _, n := range []string{"node-a", "node-b"} {
		must(admin.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}))
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "virt-handler-a"},
		Spec: corev1.PodSpec{NodeName: "node-a", ServiceAccountName: deploy.HandlerServiceAccount,
			Containers: []corev1.Container{{Name: "virt-handler", Image: "virt-handler:test"}}}}
	must(admin.Create(ctx, pod))

	// The tokens: the kubelet's for the handler's pod, and one of the
	// same account bound to nothing.
	token := func(bound bool) client.Client {
		t.Helper()
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: deploy.HandlerServiceAccount}}
		req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(600))}}
		if bound {
			req.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
		}
		must(admin.SubResource("token").Create(ctx, sa, req))
		cfg := rest.AnonymousClientConfig(env.Config)
		cfg.BearerToken = req.Status.Token
		c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
		must(err)
		return c
	}
	handlerA, unbound := token(true), token(false)

	label := func(c client.Client, node string, opts ...client.PatchOption) error {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
		return c.Patch(ctx, n, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"kubevirt.io/schedulable":"true"}}}`)), opts...)
	}
	// The apiserver takes the new policy in within a second or so: a dry
	// run tells when.
	testenv.EventuallyEvery(ctx, t, 200*time.Millisecond, "the policy in force", func() (bool, string) {
		err := label(handlerA, "node-b", client.DryRunAll)
		return apierrors.IsForbidden(err), fmt.Sprint(err)
	})
	vmiOn := func(name, node, target string) *virtv1.VirtualMachineInstance {
		t.Helper()
		v := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: virtv1.VirtualMachineInstanceSpec{Domain: virtv1.DomainSpec{
				Resources: virtv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}}}}
		must(admin.Create(ctx, v))
		v.Status = virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Running, NodeName: node}
		if target != "" {
			v.Status.MigrationState = &virtv1.VirtualMachineInstanceMigrationState{MigrationUID: "m1", SourceNode: node, TargetNode: target}
		}
		must(admin.Status().Update(ctx, v))
		return v
	}
	report := func(c client.Client, v *virtv1.VirtualMachineInstance, edit func(*virtv1.VirtualMachineInstanceStatus)) error {
		got := &virtv1.VirtualMachineInstance{}
		must(admin.Get(ctx, client.ObjectKeyFromObject(v), got))
		upd := got.DeepCopy()
		edit(&upd.Status)
		return c.Status().Patch(ctx, upd, client.MergeFrom(got))
	}
	reason := func(v *virtv1.VirtualMachineInstanceStatus) { v.Reason = "reported" }
	onA, onB, toA := vmiOn("on-a", "node-a", ""), vmiOn("on-b", "node-b", ""), vmiOn("to-a", "node-b", "node-a")

	// What the handler of node-a does.
	for what, err := range map[string]error{
		"label its node":                 label(handlerA, "node-a"),
		"report a VMI of its node":       report(handlerA, onA, reason),
		"take over a VMI migrating here": report(handlerA, toA, func(s *virtv1.VirtualMachineInstanceStatus) { s.NodeName = "node-a" }),
	} {
		if err != nil {
			t.Errorf("the handler of node-a may %s: %v", what, err)
		}
	}
	// What its credentials must not do.
	for what, c := range map[string]struct {
		err  error
		want string
	}{
		"label another node":                 {label(handlerA, "node-b"), "may not write node node-b"},
		"report a VMI of another node":       {report(handlerA, onB, reason), "may write only the VirtualMachineInstances on its node"},
		"pull a VMI of another node to it":   {report(handlerA, onB, func(s *virtv1.VirtualMachineInstanceStatus) { s.NodeName = "node-a" }), "may write only the VirtualMachineInstances on its node"},
		"push a VMI of its node elsewhere":   {report(handlerA, onA, func(s *virtv1.VirtualMachineInstanceStatus) { s.NodeName = "node-c" }), "may write only the VirtualMachineInstances on its node"},
		"label its node without a pod":       {label(unbound, "node-a"), "writes only with the token of its pod"},
		"report a VMI without a pod's token": {report(unbound, onA, reason), "writes only with the token of its pod"},
	} {
		if !apierrors.IsForbidden(c.err) && !apierrors.IsInvalid(c.err) || c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("the handler's credentials could %s: %v (want refused: %q)", what, c.err, c.want)
		}
	}
	// Nothing of node-b changed.
	n := &corev1.Node{}
	must(admin.Get(ctx, client.ObjectKey{Name: "node-b"}, n))
	if _, ok := n.Labels["kubevirt.io/schedulable"]; ok {
		t.Errorf("node-b was labelled: %v", n.Labels)
	}
	got := &virtv1.VirtualMachineInstance{}
	must(admin.Get(ctx, client.ObjectKeyFromObject(onB), got))
	if got.Status.NodeName != "node-b" || got.Status.Reason != "" {
		t.Errorf("the VMI of node-b changed: %+v", got.Status)
	}
}
