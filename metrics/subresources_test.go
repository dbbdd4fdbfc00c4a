package metrics_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/virtkit/virtkit/metrics"
)

// A VMI's stream gauge counts its open streams and goes once the last
// closes; closing twice counts once; other subresources have no gauge.
func TestSubresourcesStreams(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := metrics.NewSubresources(reg)
	if err != nil {
		t.Fatal(err)
	}
	c1 := s.Stream("console", "ns", "a")
	c2 := s.Stream("console", "ns", "a")
	v := s.Stream("vnc", "ns", "b")
	s.Stream("pause", "ns", "a")()
	c1()
	c1()
	want := `
# HELP kubevirt_console_active_connections Amount of active Console connections, broken down by namespace and vmi name.
# TYPE kubevirt_console_active_connections gauge
kubevirt_console_active_connections{namespace="ns",vmi="a"} 1
# HELP kubevirt_vnc_active_connections Amount of active VNC connections, broken down by namespace and vmi name.
# TYPE kubevirt_vnc_active_connections gauge
kubevirt_vnc_active_connections{namespace="ns",vmi="b"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), metrics.ConsoleConnectionsName, metrics.VNCConnectionsName); err != nil {
		t.Error(err)
	}
	c2()
	v()
	if n, err := testutil.GatherAndCount(reg, metrics.ConsoleConnectionsName, metrics.VNCConnectionsName); err != nil || n != 0 {
		t.Errorf("%d stream series after every stream closed (%v), want none", n, err)
	}
	if _, err := metrics.NewSubresources(reg); err == nil {
		t.Errorf("registering virt-api's series twice into one registry succeeded")
	}
}

func TestSubresourcesCalls(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := metrics.NewSubresources(reg)
	if err != nil {
		t.Fatal(err)
	}
	s.Call("virtualmachines", "start", 202)
	s.Call("virtualmachines", "start", 202)
	s.Call("virtualmachineinstances", "pause", 409)
	want := `
# HELP virtkit_subresource_requests_total Calls of the subresources.kubevirt.io API, by resource, subresource and HTTP status code (101 for a stream that opened).
# TYPE virtkit_subresource_requests_total counter
virtkit_subresource_requests_total{code="202",resource="virtualmachines",subresource="start"} 2
virtkit_subresource_requests_total{code="409",resource="virtualmachineinstances",subresource="pause"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), metrics.SubresourceRequestsName); err != nil {
		t.Error(err)
	}
}
