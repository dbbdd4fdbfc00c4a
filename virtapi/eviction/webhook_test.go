package eviction_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	virtadmission "github.com/virtkit/virtkit/virtapi/admission"
	"github.com/virtkit/virtkit/virtapi/eviction"
)

func world(t *testing.T, strategy *virtv1.EvictionStrategy, objs ...client.Object) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	assert.NilError(t, corev1.AddToScheme(scheme))
	assert.NilError(t, virtv1.AddToScheme(scheme))
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tiny", UID: "uid-1"},
		Spec:   virtv1.VirtualMachineInstanceSpec{EvictionStrategy: strategy},
		Status: virtv1.VirtualMachineInstanceStatus{Phase: virtv1.Running, NodeName: "node-a"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "virt-launcher-tiny-abcde", Labels: map[string]string{
		virtv1.AppLabel: "virt-launcher", virtv1.DeprecatedVirtualMachineNameLabel: "tiny", virtv1.CreatedByLabel: "uid-1"}},
		Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: corev1.PodSpec{NodeName: "node-a"}}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(append([]client.Object{vmi, pod, other}, objs...)...).
		WithStatusSubresource(&virtv1.VirtualMachineInstance{}).Build()
}

func evictionRequest(pod string, dryRun bool) admission.Request {
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, SubResource: "eviction",
		Namespace: "ns", Name: pod, DryRun: &dryRun, Operation: admissionv1.Create}}
}

func evacuationNode(t *testing.T, cl client.Client) string {
	t.Helper()
	vmi := &virtv1.VirtualMachineInstance{}
	assert.NilError(t, cl.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "tiny"}, vmi))
	return vmi.Status.EvacuationNodeName
}

func TestWebhook(t *testing.T) {
	live := virtv1.EvictionStrategyLiveMigrate
	ctx := eviction.FromAPIServer(context.Background())

	t.Run("a call not known to be the apiserver's is refused and records nothing", func(t *testing.T) {
		cl := world(t, &live)
		resp := eviction.NewWebhook(cl, "").Handle(context.Background(), evictionRequest("virt-launcher-tiny-abcde", false))
		assert.Assert(t, !resp.Allowed)
		assert.Equal(t, resp.Result.Code, int32(http.StatusTooManyRequests))
		assert.Assert(t, strings.Contains(resp.Result.Message, "only on a call from the apiserver"), resp.Result.Message)
		assert.Equal(t, evacuationNode(t, cl), "")
	})

	t.Run("a launcher pod of a LiveMigrate VMI is refused with 429 and its drain recorded", func(t *testing.T) {
		cl := world(t, &live)
		resp := eviction.NewWebhook(cl, "").Handle(ctx, evictionRequest("virt-launcher-tiny-abcde", false))
		assert.Assert(t, !resp.Allowed)
		assert.Equal(t, resp.Result.Code, int32(http.StatusTooManyRequests))
		assert.Equal(t, resp.Result.Message, "Eviction triggered evacuation of VMI ns/tiny")
		assert.Equal(t, evacuationNode(t, cl), "node-a")
	})
	t.Run("a dry run is refused the same way and records nothing", func(t *testing.T) {
		cl := world(t, &live)
		resp := eviction.NewWebhook(cl, "").Handle(ctx, evictionRequest("virt-launcher-tiny-abcde", true))
		assert.Assert(t, !resp.Allowed)
		assert.Equal(t, evacuationNode(t, cl), "")
	})
	t.Run("the cluster's strategy applies to a VMI that sets none", func(t *testing.T) {
		kv := &virtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt"}}
		kv.Spec.Configuration.EvictionStrategy = &live
		cl := world(t, nil, kv)
		resp := eviction.NewWebhook(cl, "").Handle(ctx, evictionRequest("virt-launcher-tiny-abcde", false))
		assert.Assert(t, !resp.Allowed)
		assert.Equal(t, evacuationNode(t, cl), "node-a")
	})
	t.Run("without a strategy the eviction passes", func(t *testing.T) {
		cl := world(t, nil)
		resp := eviction.NewWebhook(cl, "").Handle(ctx, evictionRequest("virt-launcher-tiny-abcde", false))
		assert.Assert(t, resp.Allowed)
		assert.Equal(t, evacuationNode(t, cl), "")
	})
	t.Run("a pod that is not a launcher passes", func(t *testing.T) {
		cl := world(t, &live)
		resp := eviction.NewWebhook(cl, "").Handle(ctx, evictionRequest("web", false))
		assert.Assert(t, resp.Allowed)
	})
	t.Run("a pod that is gone passes", func(t *testing.T) {
		cl := world(t, &live)
		resp := eviction.NewWebhook(cl, "").Handle(ctx, evictionRequest("nothing", false))
		assert.Assert(t, resp.Allowed)
	})
}

// stubCaller trusts requests that carry a header, standing in for a
// client certificate.
type stubCaller struct{}

func (stubCaller) VerifyCaller(r *http.Request) error {
	if r.Header.Get("X-Test-Apiserver") != "yes" {
		return errors.New("no client certificate")
	}
	return nil
}

// Over HTTP, the Caller decides: only a verified call starts an evacuation.
func TestHandlerAsksTheCaller(t *testing.T) {
	live := virtv1.EvictionStrategyLiveMigrate
	for _, c := range []struct {
		name    string
		opts    []eviction.Option
		trusted bool
		want    string
	}{
		{name: "verified", opts: []eviction.Option{eviction.WithCaller(stubCaller{})}, trusted: true, want: "node-a"},
		{name: "not verified", opts: []eviction.Option{eviction.WithCaller(stubCaller{})}},
		{name: "no caller configured trusts no one", trusted: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := world(t, &live)
			srv := httptest.NewServer(eviction.NewWebhook(cl, "", c.opts...).Handler())
			defer srv.Close()
			ar := evictionRequest("virt-launcher-tiny-abcde", false).AdmissionRequest
			review := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: &ar}
			review.Request.UID = "1"
			review.Request.Object = runtime.RawExtension{Raw: []byte(`{"apiVersion":"policy/v1","kind":"Eviction"}`)}
			body, err := json.Marshal(review)
			assert.NilError(t, err)
			req, err := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
			assert.NilError(t, err)
			req.Header.Set("Content-Type", "application/json")
			if c.trusted {
				req.Header.Set("X-Test-Apiserver", "yes")
			}
			resp, err := srv.Client().Do(req)
			assert.NilError(t, err)
			defer resp.Body.Close()
			var answer admissionv1.AdmissionReview
			assert.NilError(t, json.NewDecoder(resp.Body).Decode(&answer))
			assert.Assert(t, answer.Response != nil && !answer.Response.Allowed, "%+v", answer.Response)
			assert.Equal(t, evacuationNode(t, cl), c.want)
		})
	}
}

func TestConfiguration(t *testing.T) {
	c := eviction.Configuration(virtadmission.Service{Namespace: "kubevirt", Name: "virt-api", Port: 443})
	assert.Equal(t, c.Name, eviction.WebhookConfigurationName)
	assert.Equal(t, len(c.Webhooks), 1)
	w := c.Webhooks[0]
	assert.Equal(t, *w.ClientConfig.Service.Path, eviction.WebhookPath)
	assert.DeepEqual(t, w.Rules[0].Resources, []string{"pods/eviction"})
	assert.Equal(t, string(w.Rules[0].Operations[0]), "CREATE")
	assert.Equal(t, string(*w.FailurePolicy), "Fail")
	assert.DeepEqual(t, w.MatchConditions, []admissionregistrationv1.MatchCondition{{Name: "launcher-pods-only", Expression: eviction.LauncherPodsOnly}})
}
