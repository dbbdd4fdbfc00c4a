package subresources_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
	"github.com/virtkit/virtkit/virtapi/subresources"
)

// The observer sees every routed call with its status code, and a console
// stream while it is open: metrics.Subresources turns them into virt-api's
// series.
func TestObserverCountsCallsAndStreams(t *testing.T) {
	node := nodeapi.NewFake()
	node.Set("ns", "vm", nodeapi.FakeVMI{})
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(vmiObj(virtv1.Running)).Build()
	reg := prometheus.NewRegistry()
	obs, err := metrics.NewSubresources(reg)
	must(t, err)
	srv := httptest.NewServer(subresources.New(c,
		subresources.WithAuthenticator(anyone{}), subresources.WithAuthorizer(allowAll{}), subresources.WithObserver(obs),
		subresources.WithNodeOps(func(context.Context, string) (nodeapi.Ops, error) { return node, nil })))
	defer srv.Close()

	for _, path := range []string{"vm/pause", "vm/unpause", "gone/pause"} {
		req, err := http.NewRequest(http.MethodPut, srv.URL+subresources.Prefix+"/namespaces/ns/virtualmachineinstances/"+path, strings.NewReader("{}"))
		must(t, err)
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		resp.Body.Close()
	}

	url := "ws" + strings.TrimPrefix(srv.URL, "http") + subresources.Prefix + "/namespaces/ns/virtualmachineinstances/vm/console"
	ws, _, err := (&websocket.Dialer{Subprotocols: []string{"plain.kubevirt.io"}}).Dial(url, nil)
	must(t, err)
	// The echo proves the stream is spliced, so the gauge is up.
	must(t, ws.WriteMessage(websocket.BinaryMessage, []byte("x")))
	if _, _, err := ws.ReadMessage(); err != nil {
		t.Fatal(err)
	}
	open := `
# HELP kubevirt_console_active_connections Amount of active Console connections, broken down by namespace and vmi name.
# TYPE kubevirt_console_active_connections gauge
kubevirt_console_active_connections{namespace="ns",vmi="vm"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(open), metrics.ConsoleConnectionsName); err != nil {
		t.Error(err)
	}
	must(t, ws.Close())

	want := `
# HELP virtkit_subresource_requests_total Calls of the subresources.kubevirt.io API, by resource, subresource and HTTP status code (101 for a stream that opened).
# TYPE virtkit_subresource_requests_total counter
virtkit_subresource_requests_total{code="101",resource="virtualmachineinstances",subresource="console"} 1
virtkit_subresource_requests_total{code="200",resource="virtualmachineinstances",subresource="pause"} 1
virtkit_subresource_requests_total{code="404",resource="virtualmachineinstances",subresource="pause"} 1
virtkit_subresource_requests_total{code="409",resource="virtualmachineinstances",subresource="unpause"} 1
`
	eventually(t, 10*time.Second, func() error {
		// Closed: the VMI's gauge series is gone, and the call is counted.
		return testutil.GatherAndCompare(reg, strings.NewReader(want), metrics.SubresourceRequestsName, metrics.ConsoleConnectionsName)
	})
}
