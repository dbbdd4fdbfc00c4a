package subresources_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virtapi/frontproxy"
	"github.com/virtkit/virtkit/virtapi/subresources"
)

// labelExpander marks the VMs it expands; a VM labelled "bad" fails.
type labelExpander struct{}

func (labelExpander) Expand(_ context.Context, vm *virtv1.VirtualMachine) (*virtv1.VirtualMachine, error) {
	if vm.Labels["bad"] != "" {
		return nil, errors.New("spec.template.spec.domain.memory: Forbidden: set by the instancetype")
	}
	out := vm.DeepCopy()
	out.Labels = map[string]string{"expanded": "yes"}
	return out, nil
}

// recordingAuthz allows everything and keeps what it was asked.
type recordingAuthz struct{ asked []subresources.Attributes }

func (r *recordingAuthz) Authorize(_ context.Context, _ frontproxy.User, a subresources.Attributes) (bool, string, error) {
	r.asked = append(r.asked, a)
	return true, "", nil
}

// KubeVirt's two expand calls: a stored VM by name (RBAC get on
// virtualmachines/expand-spec), and the VM of the body (RBAC update on the
// namespaced resource expand-vm-spec), which must be of the call's
// namespace.
func TestExpandCalls(t *testing.T) {
	vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm"}, Spec: virtv1.VirtualMachineSpec{Template: template()}}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(vm).Build()
	authz := &recordingAuthz{}
	h := subresources.New(c, subresources.WithAuthenticator(anyone{}), subresources.WithAuthorizer(authz),
		subresources.WithExpander(labelExpander{}))
	body := func(vm *virtv1.VirtualMachine) string {
		b, _ := json.Marshal(vm)
		return string(b)
	}
	decoded := func(t *testing.T, raw string) *virtv1.VirtualMachine {
		t.Helper()
		out := &virtv1.VirtualMachine{}
		if err := json.Unmarshal([]byte(raw), out); err != nil {
			t.Fatalf("%v: %s", err, raw)
		}
		return out
	}

	rec := serve(h, http.MethodGet, subresources.Prefix+"/namespaces/ns/virtualmachines/vm/expand-spec", "")
	if rec.Code != http.StatusOK || decoded(t, rec.Body.String()).Labels["expanded"] != "yes" {
		t.Errorf("expand-spec: %d %s", rec.Code, rec.Body)
	}
	rec = serve(h, http.MethodGet, subresources.Prefix+"/namespaces/ns/virtualmachines/missing/expand-spec", "")
	if rec.Code != http.StatusNotFound {
		t.Errorf("expand-spec of a missing VM: %d %s", rec.Code, rec.Body)
	}

	posted := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "new"}, Spec: virtv1.VirtualMachineSpec{Template: template()}}
	rec = serve(h, http.MethodPut, subresources.Prefix+"/namespaces/ns/expand-vm-spec", body(posted))
	if got := decoded(t, rec.Body.String()); rec.Code != http.StatusOK || got.Namespace != "ns" || got.Labels["expanded"] != "yes" {
		t.Errorf("expand-vm-spec: %d %s", rec.Code, rec.Body)
	}
	wantAsked := []subresources.Attributes{
		{Verb: "get", Namespace: "ns", Name: "vm", Resource: "virtualmachines", Subresource: "expand-spec"},
		{Verb: "get", Namespace: "ns", Name: "missing", Resource: "virtualmachines", Subresource: "expand-spec"},
		{Verb: "update", Namespace: "ns", Resource: "expand-vm-spec"},
	}
	if d := cmp.Diff(wantAsked, authz.asked); d != "" {
		t.Errorf("authorization asked (-want +got):\n%s", d)
	}

	for _, c := range []struct{ name, body, want string }{
		{"empty body", "", "empty request body"},
		{"not JSON", "{", "Can not unmarshal Request body"},
		{"another namespace", body(&virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "other"}}), "VM namespace must be empty or ns"},
		{"another kind", `{"kind":"VirtualMachineInstance"}`, `kind "VirtualMachineInstance": send a VirtualMachine`},
		{"a VM that does not expand", body(&virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"bad": "1"}}}),
			"spec.template.spec.domain.memory: Forbidden"},
	} {
		rec := serve(h, http.MethodPut, subresources.Prefix+"/namespaces/ns/expand-vm-spec", c.body)
		var st metav1.Status
		_ = json.Unmarshal(rec.Body.Bytes(), &st)
		if rec.Code != http.StatusBadRequest || !strings.Contains(st.Message, c.want) {
			t.Errorf("%s: %d %s, want 400 with %q", c.name, rec.Code, rec.Body, c.want)
		}
	}
	if rec := serve(h, http.MethodGet, subresources.Prefix+"/namespaces/ns/expand-vm-spec", ""); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET expand-vm-spec: %d, want 405", rec.Code)
	}

	// Without an expander, neither call is served.
	plain := subresources.New(c, subresources.WithAuthenticator(anyone{}), subresources.WithAuthorizer(allowAll{}))
	for _, p := range []string{"/namespaces/ns/virtualmachines/vm/expand-spec", "/namespaces/ns/expand-vm-spec"} {
		if rec := serve(plain, http.MethodPut, subresources.Prefix+p, "{}"); rec.Code != http.StatusNotFound {
			t.Errorf("%s without an expander: %d, want 404", p, rec.Code)
		}
	}
}
