package virtapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virt/spec"
	"github.com/virtkit/virtkit/virtapi"
	"github.com/virtkit/virtkit/virtapi/admission"
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
