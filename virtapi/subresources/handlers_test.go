package subresources_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/virtapi/frontproxy"
	"github.com/virtkit/virtkit/virtapi/nodeapi"
	"github.com/virtkit/virtkit/virtapi/subresources"
)

// anyone authenticates every request as "tester"; allowAll allows it all.
type anyone struct{}

func (anyone) Authenticate(*http.Request) (frontproxy.User, error) {
	return frontproxy.User{Name: "tester"}, nil
}

type allowAll struct{}

func (allowAll) Authorize(context.Context, frontproxy.User, subresources.Attributes) (bool, string, error) {
	return true, "", nil
}

const vmiUID = types.UID("vmi-uid-1")

// fakeAPI is a Server over controller-runtime's fake client holding objs.
func fakeAPI(t *testing.T, node *nodeapi.Fake, objs ...client.Object) (http.Handler, client.Client) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(scheme.New()).
		WithStatusSubresource(&virtv1.VirtualMachine{}, &virtv1.VirtualMachineInstance{}).
		WithObjects(objs...).Build()
	return subresources.New(c,
		subresources.WithAuthenticator(anyone{}), subresources.WithAuthorizer(allowAll{}),
		subresources.WithNodeOps(func(context.Context, string) (nodeapi.Ops, error) { return node, nil })), c
}

func vmObj(rs virtv1.VirtualMachineRunStrategy, reqs ...virtv1.VirtualMachineStateChangeRequest) *virtv1.VirtualMachine {
	return &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm"},
		Spec:   virtv1.VirtualMachineSpec{RunStrategy: &rs, Template: template()},
		Status: virtv1.VirtualMachineStatus{StateChangeRequests: reqs}}
}

func vmiObj(phase virtv1.VirtualMachineInstancePhase) *virtv1.VirtualMachineInstance {
	return &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm", UID: vmiUID},
		Spec: vmiSpec(), Status: virtv1.VirtualMachineInstanceStatus{Phase: phase, NodeName: "node-a"}}
}

func serve(h http.Handler, method, path, body string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	h.ServeHTTP(rec, req)
	return rec
}

func TestVMVerbsPerRunStrategy(t *testing.T) {
	uid := vmiUID
	start := virtv1.VirtualMachineStateChangeRequest{Action: virtv1.StartRequest}
	stop := virtv1.VirtualMachineStateChangeRequest{Action: virtv1.StopRequest, UID: &uid}
	type want struct {
		code     int
		msg      string
		requests []virtv1.VirtualMachineStateChangeRequest
		strategy virtv1.VirtualMachineRunStrategy
	}
	cases := []struct {
		name string
		vm   *virtv1.VirtualMachine
		vmi  *virtv1.VirtualMachineInstance
		verb string
		body string
		want want
	}{
		{"start Halted", vmObj(virtv1.RunStrategyHalted), nil, "start", `{}`,
			want{code: 202, strategy: virtv1.RunStrategyAlways}},
		{"start Halted paused queues a paused Start", vmObj(virtv1.RunStrategyHalted), nil, "start", `{"paused":true}`,
			want{code: 202, strategy: virtv1.RunStrategyHalted, requests: []virtv1.VirtualMachineStateChangeRequest{
				{Action: virtv1.StartRequest, Data: map[string]string{"paused": "true"}}}}},
		{"start Manual", vmObj(virtv1.RunStrategyManual), nil, "start", ``,
			want{code: 202, strategy: virtv1.RunStrategyManual, requests: []virtv1.VirtualMachineStateChangeRequest{start}}},
		{"start Manual whose VMI succeeded restarts it", vmObj(virtv1.RunStrategyManual), vmiObj(virtv1.Succeeded), "start", `{}`,
			want{code: 202, strategy: virtv1.RunStrategyManual, requests: []virtv1.VirtualMachineStateChangeRequest{stop, start}}},
		{"start RerunOnFailure whose VMI failed", vmObj(virtv1.RunStrategyRerunOnFailure), vmiObj(virtv1.Failed), "start", `{}`,
			want{code: 409, msg: "RerunOnFailure does not support starting VM from failed state", strategy: virtv1.RunStrategyRerunOnFailure}},
		{"start Always", vmObj(virtv1.RunStrategyAlways), nil, "start", `{}`,
			want{code: 409, msg: "Always does not support manual start requests", strategy: virtv1.RunStrategyAlways}},
		{"start Once", vmObj(virtv1.RunStrategyOnce), nil, "start", `{}`,
			want{code: 409, msg: "Once does not support manual start requests", strategy: virtv1.RunStrategyOnce}},
		{"start a running VM", vmObj(virtv1.RunStrategyManual), vmiObj(virtv1.Running), "start", `{}`,
			want{code: 409, msg: "VM is already running", strategy: virtv1.RunStrategyManual}},
		{"start while a stop is queued", vmObj(virtv1.RunStrategyManual, stop), nil, "start", `{}`,
			want{code: 409, msg: "stop/start already underway", strategy: virtv1.RunStrategyManual, requests: []virtv1.VirtualMachineStateChangeRequest{stop}}},
		{"stop Always", vmObj(virtv1.RunStrategyAlways), vmiObj(virtv1.Running), "stop", `{}`,
			want{code: 202, strategy: virtv1.RunStrategyHalted}},
		{"stop Once", vmObj(virtv1.RunStrategyOnce), vmiObj(virtv1.Running), "stop", `{}`,
			want{code: 202, strategy: virtv1.RunStrategyHalted}},
		{"stop Manual replaces a queued Start", vmObj(virtv1.RunStrategyManual, start), vmiObj(virtv1.Running), "stop", `{}`,
			want{code: 202, strategy: virtv1.RunStrategyManual, requests: []virtv1.VirtualMachineStateChangeRequest{stop}}},
		{"stop Manual without VMI", vmObj(virtv1.RunStrategyManual), nil, "stop", `{}`,
			want{code: 409, msg: "VM is not running", strategy: virtv1.RunStrategyManual}},
		{"stop Halted without a shorter grace period", vmObj(virtv1.RunStrategyHalted), vmiObj(virtv1.Running), "stop", `{}`,
			want{code: 409, msg: "Halted only supports manual stop requests with a shorter graceperiod", strategy: virtv1.RunStrategyHalted}},
		{"force stop Halted", vmObj(virtv1.RunStrategyHalted), vmiObj(virtv1.Running), "stop", `{"gracePeriod":0}`,
			want{code: 202, strategy: virtv1.RunStrategyHalted, requests: []virtv1.VirtualMachineStateChangeRequest{stop}}},
		{"stop with a negative grace period", vmObj(virtv1.RunStrategyManual), vmiObj(virtv1.Running), "stop", `{"gracePeriod":-1}`,
			want{code: 400, msg: "gracePeriod has to be greater or equal to 0", strategy: virtv1.RunStrategyManual}},
		{"restart Always", vmObj(virtv1.RunStrategyAlways), vmiObj(virtv1.Running), "restart", `{}`,
			want{code: 202, strategy: virtv1.RunStrategyAlways, requests: []virtv1.VirtualMachineStateChangeRequest{stop, start}}},
		{"force restart", vmObj(virtv1.RunStrategyRerunOnFailure), vmiObj(virtv1.Running), "restart", `{"gracePeriodSeconds":0}`,
			want{code: 202, strategy: virtv1.RunStrategyRerunOnFailure, requests: []virtv1.VirtualMachineStateChangeRequest{stop, start}}},
		{"restart without VMI", vmObj(virtv1.RunStrategyManual), nil, "restart", `{}`,
			want{code: 409, msg: "VM is not running", strategy: virtv1.RunStrategyManual}},
		{"restart Once", vmObj(virtv1.RunStrategyOnce), vmiObj(virtv1.Running), "restart", `{}`,
			want{code: 409, msg: "RunStrategy Once does not support manual restart requests", strategy: virtv1.RunStrategyOnce}},
		{"dry-run stop", vmObj(virtv1.RunStrategyAlways), vmiObj(virtv1.Running), "stop", `{"dryRun":["All"]}`,
			want{code: 202, strategy: virtv1.RunStrategyAlways}},
		{"bad body", vmObj(virtv1.RunStrategyHalted), nil, "start", `[1,`,
			want{code: 400, msg: "Can not unmarshal Request body to struct", strategy: virtv1.RunStrategyHalted}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			objs := []client.Object{c.vm}
			if c.vmi != nil {
				objs = append(objs, c.vmi)
			}
			h, cl := fakeAPI(t, nodeapi.NewFake(), objs...)
			rec := serve(h, "PUT", subresources.Prefix+"/namespaces/ns/virtualmachines/vm/"+c.verb, c.body)
			var vm virtv1.VirtualMachine
			if err := cl.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "vm"}, &vm); err != nil {
				t.Fatal(err)
			}
			got := want{code: rec.Code, requests: vm.Status.StateChangeRequests, strategy: *vm.Spec.RunStrategy}
			if c.want.msg != "" && strings.Contains(rec.Body.String(), c.want.msg) {
				got.msg = c.want.msg
			} else if c.want.msg != "" {
				got.msg = rec.Body.String()
			}
			if diff := cmp.Diff(c.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodeVerbsCheckTheVMIFirst(t *testing.T) {
	paused := []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstancePaused, Status: corev1.ConditionTrue}}
	cases := []struct {
		name  string
		vmi   *virtv1.VirtualMachineInstance
		verb  string
		code  int
		msg   string
		calls bool // the node was asked
	}{
		{"pause", vmiObj(virtv1.Running), "pause", 200, "", true},
		{"dry-run pause", vmiObj(virtv1.Running), "pause?", 200, "", false},
		{"pause of a scheduling VMI", vmiObj(virtv1.Scheduling), "pause", 409, "VM is not running", false},
		{"pause of a paused VMI", withConds(vmiObj(virtv1.Running), paused), "pause", 409, "VMI is already paused", false},
		{"unpause of a running VMI", vmiObj(virtv1.Running), "unpause", 409, "VMI is not paused", false},
		{"softreboot of a paused VMI", withConds(vmiObj(virtv1.Running), paused), "softreboot", 409, "VMI is paused", false},
		{"softreboot", vmiObj(virtv1.Running), "softreboot", 200, "", true},
		{"reset", vmiObj(virtv1.Running), "reset", 200, "", true},
		{"reset of a paused VMI", withConds(vmiObj(virtv1.Running), paused), "reset", 200, "", true},
		{"reset of a scheduled VMI", vmiObj(virtv1.Scheduled), "reset", 409, "Failed to reset non-running VMI with phase Scheduled", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			node := nodeapi.NewFake()
			node.Set("ns", "vm", nodeapi.FakeVMI{})
			h, _ := fakeAPI(t, node, c.vmi)
			verb, body := strings.TrimSuffix(c.verb, "?"), ""
			if strings.HasSuffix(c.verb, "?") {
				body = `{"dryRun":["All"]}`
			}
			rec := serve(h, "PUT", subresources.Prefix+"/namespaces/ns/virtualmachineinstances/vm/"+verb, body)
			if rec.Code != c.code || !strings.Contains(rec.Body.String(), c.msg) {
				t.Errorf("%d %s, want %d %q", rec.Code, rec.Body, c.code, c.msg)
			}
			st, _ := node.State("ns", "vm")
			if asked := st.Paused || st.SoftReboots > 0 || st.Resets > 0; asked != c.calls {
				t.Errorf("node state %+v, asked=%v want %v", st, asked, c.calls)
			}
		})
	}
}

func withConds(vmi *virtv1.VirtualMachineInstance, conds []virtv1.VirtualMachineInstanceCondition) *virtv1.VirtualMachineInstance {
	vmi.Status.Conditions = conds
	return vmi
}

func TestRoutingErrors(t *testing.T) {
	h, _ := fakeAPI(t, nodeapi.NewFake())
	cases := []struct {
		method, path string
		code         int
		msg          string
	}{
		{"PUT", subresources.Prefix + "/namespaces/ns/virtualmachines/vm/explode", 404, "could not find the requested resource"},
		{"PUT", subresources.Prefix + "/namespaces/ns/virtualmachines/vm", 404, "could not find the requested resource"},
		{"POST", subresources.Prefix + "/namespaces/ns/virtualmachines/vm/start", 405, "use PUT"},
		{"GET", subresources.Prefix + "/namespaces/ns/virtualmachineinstances/vm/pause", 405, "use PUT"},
		{"PUT", subresources.Prefix + "/namespaces/ns/virtualmachines/vm/start", 404, `virtualmachine.kubevirt.io "vm" not found`},
		{"GET", subresources.Prefix + "/namespaces/ns/virtualmachineinstances/vm/console", 404, `virtualmachineinstance.kubevirt.io "vm" not found`},
	}
	for _, c := range cases {
		rec := serve(h, c.method, c.path, "")
		var st metav1.Status
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
			t.Fatalf("%s %s: body %q is not a Status: %v", c.method, c.path, rec.Body, err)
		}
		if rec.Code != c.code || st.Code != int32(c.code) || !strings.Contains(st.Message, c.msg) {
			t.Errorf("%s %s: %d %+v, want %d %q", c.method, c.path, rec.Code, st, c.code, c.msg)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q", c.method, c.path, ct)
		}
	}
}

func TestUnauthenticatedWithoutAuthenticator(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme.New()).Build()
	h := subresources.New(c)
	rec := serve(h, "PUT", subresources.Prefix+"/namespaces/ns/virtualmachines/vm/start", "{}")
	if rec.Code != 401 {
		t.Errorf("%d %s, want 401", rec.Code, rec.Body)
	}
	if rec := serve(h, "GET", subresources.Prefix, ""); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"virtualmachines/start"`) {
		t.Errorf("discovery without authentication: %d %s", rec.Code, rec.Body)
	}
}
