package subresources_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virtapi/nodeapi"
	"github.com/virtkit/virtkit/virtapi/subresources"
)

func agentConnected(vmi *virtv1.VirtualMachineInstance) *virtv1.VirtualMachineInstance {
	return withConds(vmi, []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstanceAgentConnected, Status: corev1.ConditionTrue}})
}

func TestAgentVerbs(t *testing.T) {
	path := func(verb string) string {
		return subresources.Prefix + "/namespaces/ns/virtualmachineinstances/vm/" + verb
	}
	cases := []struct {
		name   string
		vmi    *virtv1.VirtualMachineInstance
		node   nodeapi.FakeVMI
		method string
		verb   string
		body   string
		code   int
		has    string // in the body
	}{
		{"guestosinfo", agentConnected(vmiObj(virtv1.Running)), nodeapi.FakeVMI{}, "GET", "guestosinfo", "", 200, `"name":"` + nodeapi.FakeOS + `"`},
		{"userlist", agentConnected(vmiObj(virtv1.Running)), nodeapi.FakeVMI{}, "GET", "userlist", "", 200, `"items":[]`},
		{"filesystemlist", agentConnected(vmiObj(virtv1.Running)), nodeapi.FakeVMI{}, "GET", "filesystemlist", "", 200, `"mountPoint":"/"`},
		{"guestosinfo without an agent", vmiObj(virtv1.Running), nodeapi.FakeVMI{}, "GET", "guestosinfo", "", 409, "VMI does not have guest agent connected"},
		{"userlist of a scheduled VMI", agentConnected(vmiObj(virtv1.Scheduled)), nodeapi.FakeVMI{}, "GET", "userlist", "", 409, "VMI is not running"},
		{"guestosinfo when the agent stopped answering", agentConnected(vmiObj(virtv1.Running)), nodeapi.FakeVMI{NoAgent: true}, "GET", "guestosinfo", "", 503, "no guest agent answers"},
		{"freeze", vmiObj(virtv1.Running), nodeapi.FakeVMI{}, "PUT", "freeze", `{"unfreezeTimeout":"90s"}`, 200, ""},
		{"freeze without a timeout", vmiObj(virtv1.Running), nodeapi.FakeVMI{}, "PUT", "freeze", `{}`, 400, "Unfreeze timeout in freeze request is not set"},
		{"freeze with a negative timeout", vmiObj(virtv1.Running), nodeapi.FakeVMI{}, "PUT", "freeze", `{"unfreezeTimeout":"-1s"}`, 400, "must not be negative"},
		{"freeze of a scheduled VMI", vmiObj(virtv1.Scheduled), nodeapi.FakeVMI{}, "PUT", "freeze", `{"unfreezeTimeout":"90s"}`, 409, "VM is not running"},
		{"unfreeze", vmiObj(virtv1.Running), nodeapi.FakeVMI{Frozen: true}, "PUT", "unfreeze", "", 200, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			node := nodeapi.NewFake()
			node.Set("ns", "vm", c.node)
			h, _ := fakeAPI(t, node, c.vmi)
			rec := serve(h, c.method, path(c.verb), c.body)
			if rec.Code != c.code || !strings.Contains(rec.Body.String(), c.has) {
				t.Fatalf("%d %s, want %d with %q", rec.Code, rec.Body, c.code, c.has)
			}
			st, _ := node.State("ns", "vm")
			switch c.name {
			case "freeze":
				if !st.Frozen || st.UnfreezeTimeout != 90*time.Second {
					t.Errorf("node state %+v, want frozen for at most 90s", st)
				}
			case "unfreeze":
				if st.Frozen {
					t.Errorf("node state %+v, want thawed", st)
				}
			case "guestosinfo":
				var info virtv1.VirtualMachineInstanceGuestAgentInfo
				if err := json.Unmarshal(rec.Body.Bytes(), &info); err != nil || info.GAVersion != "fake" {
					t.Errorf("body %s: %v", rec.Body, err)
				}
			}
		})
	}
}
