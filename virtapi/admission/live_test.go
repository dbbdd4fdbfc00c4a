package admission_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrladmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virt/spec"
	"github.com/virtkit/virtkit/virtapi/admission"
)

func vmiRequest(t *testing.T) ctrladmission.Request {
	t.Helper()
	raw, err := json.Marshal(minimalVMI("live"))
	if err != nil {
		t.Fatal(err)
	}
	return ctrladmission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Namespace: "default", Name: "live",
		Kind:   metav1.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstance"},
		Object: runtime.RawExtension{Raw: raw},
	}}
}

// The webhooks take the settings in force at each request: a changed
// KubeVirt CR reaches them without a restart, and settings that cannot be
// read refuse the request rather than admit it unchecked.
func TestWebhooksReadTheSettingsAtEachRequest(t *testing.T) {
	machine := "pc-q35-8.0"
	var readErr error
	source := func(context.Context) ([]spec.Option, error) {
		return []spec.Option{spec.WithDefaultMachineType(machine)}, readErr
	}
	h := admission.HandlersFrom(scheme.New(), source)
	d := h[admission.MutatePath].(interface {
		Handle(context.Context, ctrladmission.Request) ctrladmission.Response
	})
	patched := func() string {
		resp := d.Handle(context.Background(), vmiRequest(t))
		if !resp.Allowed {
			return "refused: " + resp.Result.Message
		}
		b, _ := json.Marshal(resp.Patches)
		return string(b)
	}
	if got := patched(); !strings.Contains(got, `"pc-q35-8.0"`) {
		t.Errorf("first request's patch %s: no machine type pc-q35-8.0", got)
	}
	machine = "pc-q35-9.0"
	if got := patched(); !strings.Contains(got, `"pc-q35-9.0"`) {
		t.Errorf("after the change, patch %s: no machine type pc-q35-9.0", got)
	}
	readErr = errors.New("several KubeVirt CRs")
	if got := patched(); !strings.Contains(got, "refused: the cluster's settings: several KubeVirt CRs") {
		t.Errorf("with unreadable settings: %s; want refused", got)
	}
}
