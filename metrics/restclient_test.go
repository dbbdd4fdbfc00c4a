package metrics_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/virtkit/virtkit/metrics"
)

func TestRequestVerbAndResource(t *testing.T) {
	for _, tc := range []struct {
		method, path, watch string
		verb, resource      string
	}{
		{"GET", "/api/v1/namespaces/default/pods", "", "list", "pods"},
		{"GET", "/api/v1/namespaces/default/pods", "true", "watch", "pods"},
		{"GET", "/api/v1/watch/namespaces/default/pods", "", "watch", "pods"},
		{"GET", "/api/v1/namespaces/default/pods/p", "", "get", "pods"},
		{"POST", "/api/v1/namespaces/default/pods", "", "create", "pods"},
		{"POST", "/api/v1/namespaces/default/events", "", "create", "events"},
		{"PUT", "/apis/kubevirt.io/v1/namespaces/ns/virtualmachineinstances/v/status", "", "update", "virtualmachineinstances/status"},
		{"PATCH", "/apis/kubevirt.io/v1/namespaces/ns/virtualmachineinstances/v", "", "patch", "virtualmachineinstances"},
		{"DELETE", "/api/v1/namespaces/default/pods/p", "", "delete", "pods"},
		{"DELETE", "/api/v1/namespaces/default/pods", "", "deletecollection", "pods"},
		{"GET", "/api/v1/nodes", "", "list", "nodes"},
		{"GET", "/api/v1/namespaces/kubevirt", "", "get", "namespaces"},
		{"GET", "/apis/kubevirt.io/v1/virtualmachineinstances", "", "list", "virtualmachineinstances"},
		{"GET", "/healthz", "", "list", "/healthz"},
	} {
		got := [2]string{metrics.RequestVerb(tc.method, tc.path, tc.watch), metrics.RequestResource(tc.path)}
		if d := cmp.Diff([2]string{tc.verb, tc.resource}, got); d != "" {
			t.Errorf("%s %s watch=%q (-want +got):\n%s", tc.method, tc.path, tc.watch, d)
		}
	}
}

// TestClientRequestsCountsAClientsRequests runs client-go against a fake
// apiserver and reads the counter back.
func TestClientRequestsCountsAClientsRequests(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default"}}`))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"Status","status":"Failure","reason":"NotFound","code":404}`))
	}))
	defer srv.Close()
	reg := prometheus.NewRegistry()
	cr, err := metrics.NewClientRequests(reg)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cr.Wrap("virt-controller", &rest.Config{Host: srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 2 {
		if _, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = cs.CoreV1().Pods("default").Get(ctx, "q", metav1.GetOptions{})
	want := `
# HELP kubevirt_rest_client_requests_total Number of requests to the apiserver, by component, Kubernetes verb, resource and status code.
# TYPE kubevirt_rest_client_requests_total counter
kubevirt_rest_client_requests_total{code="201",component="virt-controller",resource="pods",verb="create"} 2
kubevirt_rest_client_requests_total{code="404",component="virt-controller",resource="pods",verb="get"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), metrics.ClientRequestsName); err != nil {
		t.Error(err)
	}
}
