package virtapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	virtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virt/spec"
	"github.com/virtkit/virtkit/virtapi"
	"github.com/virtkit/virtkit/virtapi/admission"
	"github.com/virtkit/virtkit/virtapi/frontproxy"
	"github.com/virtkit/virtkit/virtapi/subresources"
)

// One handler serves the webhooks at their paths and the subresources API
// everywhere else; the cluster's spec options reach the webhooks.
func TestHandlerRoutes(t *testing.T) {
	s := scheme.New()
	h := virtapi.Handler(fake.NewClientBuilder().WithScheme(s).Build(), s,
		virtapi.Config{SpecOptions: []spec.Option{spec.WithDefaultMachineType("pc-q35-custom")}})

	// Discovery of the aggregated API.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/apis/subresources.kubevirt.io/v1", nil))
	var list metav1.APIResourceList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); rec.Code != http.StatusOK || err != nil || list.GroupVersion != "subresources.kubevirt.io/v1" {
		t.Errorf("discovery: %d %s (%v)", rec.Code, rec.Body, err)
	}

	// A verb without an authenticator is refused, not served.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPut, "/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachines/vm/start", nil))
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("start without an authenticator: %d, want 401", rec.Code)
	}

	// The mutating webhook defaults a VMI's machine type from the options.
	vmi := &virtv1.VirtualMachineInstance{TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance"},
		ObjectMeta: metav1.ObjectMeta{Name: "v", Namespace: "default"}}
	raw, _ := json.Marshal(vmi)
	review := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "1", Kind: metav1.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstance"},
			Resource:  metav1.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"},
			Operation: admissionv1.Create, Namespace: "default", Name: "v", Object: runtime.RawExtension{Raw: raw}}}
	body, _ := json.Marshal(review)
	req := httptest.NewRequest(http.MethodPost, admission.MutatePath, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var got admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Response == nil || !got.Response.Allowed {
		t.Fatalf("mutate: %d %s (%v)", rec.Code, rec.Body, err)
	}
	var ops []map[string]any
	if err := json.Unmarshal(got.Response.Patch, &ops); err != nil {
		t.Fatal(err)
	}
	var machine any
	for _, op := range ops {
		if op["path"] == "/spec/domain/machine" {
			machine = op["value"]
		}
	}
	if d := cmp.Diff(map[string]any{"type": "pc-q35-custom"}, machine); d != "" {
		t.Errorf("defaulted machine (-want +got):\n%s", d)
	}
}

// virt-api's expand calls read a VM's instancetype and write it into the
// template, under the cluster's settings.
func TestExpandSpecWritesTheInstancetypeIn(t *testing.T) {
	s := scheme.New()
	it := &instancetypev1beta1.VirtualMachineClusterInstancetype{ObjectMeta: metav1.ObjectMeta{Name: "small"},
		Spec: instancetypev1beta1.VirtualMachineInstancetypeSpec{CPU: instancetypev1beta1.CPUInstancetype{Guest: 2},
			Memory: instancetypev1beta1.MemoryInstancetype{Guest: resource.MustParse("256Mi")}}}
	vm := &virtv1.VirtualMachine{TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{Name: "sized", Namespace: "default"},
		Spec: virtv1.VirtualMachineSpec{Instancetype: &virtv1.InstancetypeMatcher{Name: "small", Kind: "virtualmachineclusterinstancetype"},
			Template: &virtv1.VirtualMachineInstanceTemplateSpec{}}}
	h := virtapi.Handler(fake.NewClientBuilder().WithScheme(s).WithObjects(it, vm).Build(), s,
		virtapi.Config{SpecOptions: []spec.Option{spec.WithDefaultMachineType("pc-q35-custom")},
			Subresources: []subresources.Option{subresources.WithAuthenticator(anyUser{}), subresources.WithAuthorizer(allowAll{})}})

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, subresources.Prefix+"/namespaces/default/virtualmachines/sized/expand-spec", nil))
	got := &virtv1.VirtualMachine{}
	if err := json.Unmarshal(rec.Body.Bytes(), got); rec.Code != http.StatusOK || err != nil {
		t.Fatalf("expand-spec: %d %s (%v)", rec.Code, rec.Body, err)
	}
	d := got.Spec.Template.Spec.Domain
	if got.Spec.Instancetype != nil || d.Memory == nil || d.Memory.Guest.String() != "256Mi" || d.Machine == nil || d.Machine.Type != "pc-q35-custom" {
		t.Errorf("expanded VM: instancetype %+v, memory %+v, machine %+v", got.Spec.Instancetype, d.Memory, d.Machine)
	}

	// A VM of the body whose template sets what the instancetype sets.
	conflicting := vm.DeepCopy()
	conflicting.Spec.Template.Spec.Domain.Memory = &virtv1.Memory{Guest: ptrQty("1Gi")}
	raw, _ := json.Marshal(conflicting)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPut, subresources.Prefix+"/namespaces/default/expand-vm-spec", bytes.NewReader(raw)))
	if rec.Code != http.StatusBadRequest || !bytes.Contains(rec.Body.Bytes(), []byte("spec.template.spec.domain.memory")) {
		t.Errorf("a conflicting VM: %d %s, want 400 naming spec.template.spec.domain.memory", rec.Code, rec.Body)
	}
}

type anyUser struct{}

func (anyUser) Authenticate(*http.Request) (frontproxy.User, error) {
	return frontproxy.User{Name: "tester"}, nil
}

type allowAll struct{}

func (allowAll) Authorize(context.Context, frontproxy.User, subresources.Attributes) (bool, string, error) {
	return true, "", nil
}

func ptrQty(s string) *resource.Quantity { q := resource.MustParse(s); return &q }
