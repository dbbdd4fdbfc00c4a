package subresources

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
)

func TestStateChangePatch(t *testing.T) {
	uid := types.UID("u1")
	start := virtv1.VirtualMachineStateChangeRequest{Action: virtv1.StartRequest}
	stop := virtv1.VirtualMachineStateChangeRequest{Action: virtv1.StopRequest, UID: &uid}
	cases := []struct {
		name    string
		status  virtv1.VirtualMachineStatus
		changes []virtv1.VirtualMachineStateChangeRequest
		want    string
		err     error
	}{
		{"no status at all: add it whole", virtv1.VirtualMachineStatus{}, []virtv1.VirtualMachineStateChangeRequest{start},
			`[{"op":"add","path":"/status","value":{"stateChangeRequests":[{"action":"Start"}]}}]`, nil},
		{"status without requests: test null, add", virtv1.VirtualMachineStatus{Created: true}, []virtv1.VirtualMachineStateChangeRequest{stop, start},
			`[{"op":"test","path":"/status/stateChangeRequests","value":null},{"op":"add","path":"/status/stateChangeRequests","value":[{"action":"Stop","uid":"u1"},{"action":"Start"}]}]`, nil},
		{"a stop replaces queued requests", virtv1.VirtualMachineStatus{StateChangeRequests: []virtv1.VirtualMachineStateChangeRequest{start}}, []virtv1.VirtualMachineStateChangeRequest{stop},
			`[{"op":"test","path":"/status/stateChangeRequests","value":[{"action":"Start"}]},{"op":"replace","path":"/status/stateChangeRequests","value":[{"action":"Stop","uid":"u1"}]}]`, nil},
		{"anything else behind queued requests is underway", virtv1.VirtualMachineStatus{StateChangeRequests: []virtv1.VirtualMachineStateChangeRequest{stop}}, []virtv1.VirtualMachineStateChangeRequest{start},
			"", errUnderway},
		{"a start failure is cleared", virtv1.VirtualMachineStatus{StartFailure: &virtv1.VirtualMachineStartFailure{ConsecutiveFailCount: 3}}, []virtv1.VirtualMachineStateChangeRequest{start},
			`[{"op":"test","path":"/status/stateChangeRequests","value":null},{"op":"add","path":"/status/stateChangeRequests","value":[{"action":"Start"}]},{"op":"remove","path":"/status/startFailure"}]`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := stateChangePatch(&virtv1.VirtualMachine{Status: c.status}, c.changes...)
			if err != c.err {
				t.Fatalf("error %v, want %v", err, c.err)
			}
			if diff := cmp.Diff(c.want, string(got)); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunStrategyPatch(t *testing.T) {
	always, yes := virtv1.RunStrategyAlways, true
	cases := []struct {
		name    string
		spec    virtv1.VirtualMachineSpec
		running bool
		want    string
	}{
		{"runStrategy", virtv1.VirtualMachineSpec{RunStrategy: &always}, false,
			`[{"op":"test","path":"/spec/runStrategy","value":"Always"},{"op":"replace","path":"/spec/runStrategy","value":"Halted"}]`},
		{"deprecated running keeps its field", virtv1.VirtualMachineSpec{Running: &yes}, false,
			`[{"op":"test","path":"/spec/running","value":true},{"op":"replace","path":"/spec/running","value":false}]`},
		{"neither gets runStrategy", virtv1.VirtualMachineSpec{}, true,
			`[{"op":"test","path":"/spec/runStrategy","value":null},{"op":"add","path":"/spec/runStrategy","value":"Always"}]`},
	}
	for _, c := range cases {
		got, err := runStrategyPatch(&virtv1.VirtualMachine{Spec: c.spec}, c.running)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(c.want, string(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}
