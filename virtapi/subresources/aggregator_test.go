package subresources_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virtapi/subresources"
)

// Every verb through the real aggregator, as alice (who has the RBAC) and
// bob (who has none), with KubeVirt's codes and effects.
func TestThroughTheAggregator(t *testing.T) {
	w := newWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("discovery and version", func(t *testing.T) {
		cs, err := kubernetes.NewForConfig(w.bob)
		must(t, err)
		list, err := cs.Discovery().ServerResourcesForGroupVersion(subresources.Group + "/" + subresources.Version)
		must(t, err)
		var names []string
		for _, r := range list.APIResources {
			names = append(names, r.Name)
		}
		for _, want := range []string{"virtualmachines/start", "virtualmachineinstances/console"} {
			if !strings.Contains(strings.Join(names, " "), want) {
				t.Errorf("discovery lacks %s: %v", want, names)
			}
		}
		if code, b := do(t, w.bob, "GET", subresources.Prefix+"/version", ""); code != 200 || !strings.Contains(string(b), `"gitVersion":"v9.9.9-test"`) {
			t.Errorf("version: %d %s", code, b)
		}
	})

	w.createVM(t, "halted", virtv1.RunStrategyHalted)
	w.createVM(t, "manual", virtv1.RunStrategyManual)
	w.createVM(t, "always", virtv1.RunStrategyAlways)
	w.createVM(t, "running-manual", virtv1.RunStrategyManual)
	w.createVM(t, "rerun", virtv1.RunStrategyRerunOnFailure)
	runningVMI := w.runVMI(t, "running-manual", "node-a")
	alwaysVMI := w.runVMI(t, "always", "node-a")
	rerunVMI := w.runVMI(t, "rerun", "node-a")

	// Each case checks the answer, then what the API shows.
	cases := []struct {
		name, user, method, path, body string
		code                           int
		msg                            string // in the Status message
		check                          func(t *testing.T)
	}{
		{name: "dry-run start changes nothing", user: "alice", method: "PUT", path: vmPath("halted", "start"),
			body: `{"dryRun":["All"]}`, code: 202, check: func(t *testing.T) {
				if rs := *w.getVM(t, "halted").Spec.RunStrategy; rs != virtv1.RunStrategyHalted {
					t.Errorf("runStrategy %s after a dry run", rs)
				}
			}},
		{name: "bob may not start", user: "bob", method: "PUT", path: vmPath("halted", "start"), body: `{}`,
			code: 403, msg: `User "bob" cannot update resource "virtualmachines/start" in API group "subresources.kubevirt.io"`},
		{name: "start of a Halted VM switches it to Always", user: "alice", method: "PUT", path: vmPath("halted", "start"), body: `{}`,
			code: 202, check: func(t *testing.T) {
				if rs := *w.getVM(t, "halted").Spec.RunStrategy; rs != virtv1.RunStrategyAlways {
					t.Errorf("runStrategy %s, want Always", rs)
				}
			}},
		{name: "start of a Manual VM queues a Start", user: "alice", method: "PUT", path: vmPath("manual", "start"), body: `{"paused":true}`,
			code: 202, check: func(t *testing.T) {
				want := []virtv1.VirtualMachineStateChangeRequest{{Action: virtv1.StartRequest, Data: map[string]string{"paused": "true"}}}
				if diff := cmp.Diff(want, w.getVM(t, "manual").Status.StateChangeRequests); diff != "" {
					t.Errorf("stateChangeRequests (-want +got):\n%s", diff)
				}
			}},
		{name: "a second start while one is queued", user: "alice", method: "PUT", path: vmPath("manual", "start"), body: ``,
			code: 409, msg: "stop/start already underway"},
		{name: "start of a running VM", user: "alice", method: "PUT", path: vmPath("running-manual", "start"), body: `{}`,
			code: 409, msg: "VM is already running"},
		{name: "start of an Always VM", user: "alice", method: "PUT", path: vmPath("always", "start"), body: `{}`,
			code: 409, msg: "VM is already running"},
		{name: "start of a missing VM", user: "alice", method: "PUT", path: vmPath("nosuchvm", "start"), body: `{}`,
			code: 404, msg: `virtualmachine.kubevirt.io "nosuchvm" not found`},
		{name: "start with a bad body", user: "alice", method: "PUT", path: vmPath("halted", "start"), body: `{"paused":`,
			code: 400, msg: "Can not unmarshal Request body"},
		{name: "start with an unknown dryRun", user: "alice", method: "PUT", path: vmPath("halted", "start"), body: `{"dryRun":["Some"]}`,
			code: 400, msg: "dryRun"},
		{name: "GET on a PUT verb is refused by the apiserver's own RBAC check", user: "alice", method: "GET", path: vmPath("halted", "start"),
			code: 403, msg: `cannot get resource "virtualmachines/start"`},
		{name: "stop of a running Manual VM queues a Stop of its VMI", user: "alice", method: "PUT", path: vmPath("running-manual", "stop"),
			body: `{"gracePeriod":5}`, code: 202, check: func(t *testing.T) {
				want := []virtv1.VirtualMachineStateChangeRequest{{Action: virtv1.StopRequest, UID: &runningVMI.UID}}
				if diff := cmp.Diff(want, w.getVM(t, "running-manual").Status.StateChangeRequests); diff != "" {
					t.Errorf("stateChangeRequests (-want +got):\n%s", diff)
				}
				if g := w.getVMI(t, "running-manual").Spec.TerminationGracePeriodSeconds; g == nil || *g != 5 {
					t.Errorf("VMI terminationGracePeriodSeconds %v, want 5", g)
				}
			}},
		{name: "stop of a RerunOnFailure VM queues a Stop", user: "alice", method: "PUT", path: vmPath("rerun", "stop"), code: 202,
			check: func(t *testing.T) {
				want := []virtv1.VirtualMachineStateChangeRequest{{Action: virtv1.StopRequest, UID: &rerunVMI.UID}}
				if diff := cmp.Diff(want, w.getVM(t, "rerun").Status.StateChangeRequests); diff != "" {
					t.Errorf("stateChangeRequests (-want +got):\n%s", diff)
				}
			}},
		{name: "stop of a Manual VM that does not run", user: "alice", method: "PUT", path: vmPath("manual", "stop"), body: `{}`,
			code: 409, msg: "VM is not running"},
		{name: "restart of an Always VM queues Stop then Start", user: "alice", method: "PUT", path: vmPath("always", "restart"), body: `{}`,
			code: 202, check: func(t *testing.T) {
				want := []virtv1.VirtualMachineStateChangeRequest{{Action: virtv1.StopRequest, UID: &alwaysVMI.UID}, {Action: virtv1.StartRequest}}
				if diff := cmp.Diff(want, w.getVM(t, "always").Status.StateChangeRequests); diff != "" {
					t.Errorf("stateChangeRequests (-want +got):\n%s", diff)
				}
			}},
		{name: "restart with a grace period other than 0", user: "alice", method: "PUT", path: vmPath("always", "restart"),
			body: `{"gracePeriodSeconds":3}`, code: 400, msg: "only gracePeriod=0 is supported"},
		{name: "bob may not restart", user: "bob", method: "PUT", path: vmPath("always", "restart"), code: 403, msg: `cannot update resource "virtualmachines/restart"`},
		{name: "stop of an Always VM switches it to Halted", user: "alice", method: "PUT", path: vmPath("always", "stop"), body: `{}`,
			code: 202, check: func(t *testing.T) {
				if rs := *w.getVM(t, "always").Spec.RunStrategy; rs != virtv1.RunStrategyHalted {
					t.Errorf("runStrategy %s, want Halted", rs)
				}
			}},
		{name: "restart of a Halted VM", user: "alice", method: "PUT", path: vmPath("always", "restart"), code: 409,
			msg: "does not support manual restart requests"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := map[string]*rest.Config{"alice": w.alice, "bob": w.bob}[c.user]
			code, st := call(t, cfg, c.method, c.path, c.body)
			if code != c.code {
				t.Fatalf("%s %s: %d %q, want %d", c.method, c.path, code, st.Message, c.code)
			}
			if c.msg != "" && !strings.Contains(st.Message, c.msg) {
				t.Errorf("message %q does not contain %q", st.Message, c.msg)
			}
			if c.code >= 400 && st.Code != int32(c.code) {
				t.Errorf("Status.code %d, want %d (%+v)", st.Code, c.code, st)
			}
			if c.check != nil {
				c.check(t)
			}
		})
	}

	t.Run("migrate creates a VirtualMachineInstanceMigration", func(t *testing.T) {
		w.createVM(t, "mig", virtv1.RunStrategyAlways)
		w.runVMI(t, "mig", "node-a")
		// The edit role does not migrate (as in KubeVirt since 1.5): a
		// cluster admin binds kubevirt.io:migrate.
		code, st := call(t, w.alice, "PUT", vmPath("mig", "migrate"), `{"addedNodeSelector":{"zone":"b"}}`)
		if code != 403 || !strings.Contains(st.Message, `cannot update resource "virtualmachines/migrate"`) {
			t.Fatalf("migrate with the edit role only: %d %q, want 403", code, st.Message)
		}
		must(t, w.c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "alice-migrate"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: subresources.MigrateClusterRoleName},
			Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "alice"}}}))
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if code, st = call(t, w.alice, "PUT", vmPath("mig", "migrate"), `{"addedNodeSelector":{"zone":"b"}}`); code != 403 || time.Now().After(deadline) {
				break
			}
		}
		if code != 202 {
			t.Fatalf("migrate: %d %s", code, st.Message)
		}
		var migs virtv1.VirtualMachineInstanceMigrationList
		must(t, w.c.List(ctx, &migs, client.InNamespace("default")))
		if len(migs.Items) != 1 || !strings.HasPrefix(migs.Items[0].Name, subresources.MigrationGenerateName) {
			t.Fatalf("migrations: %+v", migs.Items)
		}
		want := virtv1.VirtualMachineInstanceMigrationSpec{VMIName: "mig", AddedNodeSelector: map[string]string{"zone": "b"}}
		if diff := cmp.Diff(want, migs.Items[0].Spec); diff != "" {
			t.Errorf("migration spec (-want +got):\n%s", diff)
		}
		if code, st := call(t, w.alice, "PUT", vmPath("manual", "migrate"), `{}`); code != 404 || !strings.Contains(st.Message, "virtualmachineinstance") {
			t.Errorf("migrate of a VM without VMI: %d %q, want 404", code, st.Message)
		}
	})

	t.Run("addvolume and removevolume of a VM patch its template", func(t *testing.T) {
		w.createVM(t, "hotplug", virtv1.RunStrategyAlways)
		w.runVMI(t, "hotplug", "node-a")
		body := `{"name":"data","disk":{"disk":{"bus":"scsi"}},"volumeSource":{"persistentVolumeClaim":{"claimName":"pvc-data"}}}`
		// A claim that does not exist is refused before anything is written.
		if code, st := call(t, w.alice, "PUT", vmPath("hotplug", "addvolume"), body); code != 400 ||
			!strings.Contains(st.Message, "volumeSource.persistentVolumeClaim.claimName: PersistentVolumeClaim pvc-data does not exist") {
			t.Errorf("addvolume of a missing claim: %d %q, want 400 naming the field", code, st.Message)
		}
		if got := w.getVM(t, "hotplug").Spec.Template.Spec.Volumes; len(got) != 1 {
			t.Errorf("a refused addvolume changed the template: %+v", got)
		}
		must(t, w.c.Create(context.Background(), &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pvc-data"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}))
		if code, st := call(t, w.alice, "PUT", vmPath("hotplug", "addvolume"), body); code != 202 {
			t.Fatalf("addvolume: %d %s", code, st.Message)
		}
		wantVol := virtv1.Volume{Name: "data", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "pvc-data"}, Hotpluggable: true}}}
		wantDisk := virtv1.Disk{Name: "data", DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: "scsi"}}}
		// The template only: the VM controller carries it to the VMI.
		vm, vmi := w.getVM(t, "hotplug"), w.getVMI(t, "hotplug")
		if diff := cmp.Diff([]virtv1.Volume{vmiSpec().Volumes[0], wantVol}, vm.Spec.Template.Spec.Volumes); diff != "" {
			t.Errorf("template volumes (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(append(vmiSpec().Domain.Devices.Disks, wantDisk), vm.Spec.Template.Spec.Domain.Devices.Disks); diff != "" {
			t.Errorf("template disks (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(vmiSpec().Volumes, vmi.Spec.Volumes); diff != "" {
			t.Errorf("the VM's addvolume changed the VMI's volumes (-want +got):\n%s", diff)
		}
		if code, st := call(t, w.alice, "PUT", vmPath("hotplug", "addvolume"), body); code != 409 || !strings.Contains(st.Message, "already exists") {
			t.Errorf("adding it twice: %d %q, want 409", code, st.Message)
		}
		if code, st := call(t, w.alice, "PUT", vmPath("hotplug", "removevolume"), `{"name":"root"}`); code != 409 || !strings.Contains(st.Message, "not hotpluggable") {
			t.Errorf("removing the root disk: %d %q, want 409", code, st.Message)
		}
		if code, st := call(t, w.alice, "PUT", vmPath("hotplug", "removevolume"), `{"name":"data"}`); code != 202 {
			t.Fatalf("removevolume: %d %s", code, st.Message)
		}
		vm = w.getVM(t, "hotplug")
		if len(vm.Spec.Template.Spec.Volumes) != 1 || len(vm.Spec.Template.Spec.Domain.Devices.Disks) != 1 {
			t.Errorf("after removevolume: template %v", vm.Spec.Template.Spec.Volumes)
		}
		if code, st := call(t, w.alice, "PUT", vmiPath("hotplug", "addvolume"), `{"name":"x"}`); code != 400 || !strings.Contains(st.Message, "requires disk") {
			t.Errorf("VMI addvolume without a disk: %d %q, want 400", code, st.Message)
		}
	})

	t.Run("pause, unpause, softreboot and reset reach the VMI's node", func(t *testing.T) {
		w.runVMI(t, "guest", "node-a")
		if code, st := call(t, w.alice, "PUT", vmiPath("guest", "pause"), `{}`); code != 200 {
			t.Fatalf("pause: %d %s", code, st.Message)
		}
		if st, _ := w.node.State("default", "guest"); !st.Paused {
			t.Error("the node did not pause the guest")
		}
		// The handler reports the pause in the VMI's status.
		vmi := w.getVMI(t, "guest")
		vmi.Status.Conditions = []virtv1.VirtualMachineInstanceCondition{{Type: virtv1.VirtualMachineInstancePaused, Status: corev1.ConditionTrue}}
		must(t, w.c.Status().Update(ctx, vmi))
		if code, st := call(t, w.alice, "PUT", vmiPath("guest", "pause"), `{}`); code != 409 || !strings.Contains(st.Message, "VMI is already paused") {
			t.Errorf("pause of a paused VMI: %d %q", code, st.Message)
		}
		if code, st := call(t, w.alice, "PUT", vmiPath("guest", "softreboot"), ``); code != 409 || !strings.Contains(st.Message, "VMI is paused") {
			t.Errorf("softreboot of a paused VMI: %d %q", code, st.Message)
		}
		if code, st := call(t, w.alice, "PUT", vmiPath("guest", "unpause"), `{}`); code != 200 {
			t.Fatalf("unpause: %d %s", code, st.Message)
		}
		vmi = w.getVMI(t, "guest")
		vmi.Status.Conditions = nil
		must(t, w.c.Status().Update(ctx, vmi))
		if code, st := call(t, w.alice, "PUT", vmiPath("guest", "softreboot"), ``); code != 200 {
			t.Fatalf("softreboot: %d %s", code, st.Message)
		}
		// KubeVirt's client sends a reset with no body.
		if code, st := call(t, w.alice, "PUT", vmiPath("guest", "reset"), ``); code != 200 {
			t.Fatalf("reset: %d %s", code, st.Message)
		}
		if st, _ := w.node.State("default", "guest"); st.Paused || st.SoftReboots != 1 || st.Resets != 1 {
			t.Errorf("node state %+v, want unpaused with one reboot and one reset", st)
		}
		if code, st := call(t, w.bob, "PUT", vmiPath("guest", "reset"), ``); code != 403 || !strings.Contains(st.Message, `cannot update resource "virtualmachineinstances/reset"`) {
			t.Errorf("bob resetting: %d %q", code, st.Message)
		}
		if code, st := call(t, w.bob, "PUT", vmiPath("guest", "pause"), `{}`); code != 403 || !strings.Contains(st.Message, `cannot update resource "virtualmachineinstances/pause"`) {
			t.Errorf("bob pausing: %d %q", code, st.Message)
		}
		w.runVMI(t, "adrift", "node-b")
		if code, st := call(t, w.alice, "PUT", vmiPath("adrift", "pause"), `{}`); code != 503 || !strings.Contains(st.Message, "virtkit.io/handler-address") {
			t.Errorf("pause on a node without handler: %d %q, want 503 naming the annotation", code, st.Message)
		}
	})

	t.Run("console bytes echo through the aggregator's websocket proxy", func(t *testing.T) {
		w.runVMI(t, "tty", "node-a")
		conn := dialStream(t, w.alice, vmiPath("tty", "console"))
		defer conn.Close()
		for _, msg := range []string{"hello\r\n", "\x1b[A\x00\xff"} {
			must(t, conn.WriteMessage(websocket.BinaryMessage, []byte(msg)))
			var got []byte
			for len(got) < len(msg) {
				typ, b, err := conn.ReadMessage()
				must(t, err)
				if typ != websocket.BinaryMessage {
					t.Fatalf("message type %d, want binary", typ)
				}
				got = append(got, b...)
			}
			if string(got) != msg {
				t.Errorf("echo %q, want %q", got, msg)
			}
		}
		_, resp, err := dialer(t, w.bob).Dial(wsURL(w.bob, vmiPath("tty", "vnc")), nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("bob's vnc: %v, %v; want 403", err, resp)
		}
	})

	t.Run("the Go client speaks the same wire", func(t *testing.T) {
		alice, err := subresources.NewClient(w.alice)
		must(t, err)
		bob, err := subresources.NewClient(w.bob)
		must(t, err)
		w.createVM(t, "by-client", virtv1.RunStrategyHalted)
		must(t, alice.Start(ctx, "default", "by-client", virtv1.StartOptions{}))
		if rs := w.getVM(t, "by-client").Spec.RunStrategy; rs == nil || *rs != virtv1.RunStrategyAlways {
			t.Errorf("after Start, runStrategy = %v, want Always", rs)
		}
		err = bob.Stop(ctx, "default", "by-client", virtv1.StopOptions{})
		var se *subresources.StatusError
		if !errors.As(err, &se) || se.Status.Code != http.StatusForbidden {
			t.Errorf("bob's Stop = %v, want a 403 StatusError", err)
		}
		err = alice.Start(ctx, "default", "by-client", virtv1.StartOptions{})
		if !errors.As(err, &se) || se.Status.Code != http.StatusConflict {
			t.Errorf("second Start = %v, want a 409 StatusError", err)
		}
		if v, err := bob.Version(ctx); err != nil || v.GitVersion != "v9.9.9-test" {
			t.Errorf("Version = %+v, %v; want v9.9.9-test", v, err)
		}
		w.runVMI(t, "tty2", "node-a")
		con, err := alice.Console(ctx, "default", "tty2")
		must(t, err)
		defer con.Close()
		_, err = con.Write([]byte("ping\n"))
		must(t, err)
		got := make([]byte, 5)
		_, err = io.ReadFull(con, got)
		must(t, err)
		if string(got) != "ping\n" {
			t.Errorf("console echo %q", got)
		}
	})

	t.Run("portforward and screenshot through the aggregator", func(t *testing.T) {
		port := echoGuest(t)
		vmi := w.runVMI(t, "web", "node-a")
		guestAt(vmi, "127.0.0.1")
		must(t, w.c.Status().Update(ctx, vmi))
		alice, err := subresources.NewClient(w.alice)
		must(t, err)
		p, _ := strconv.Atoi(port)
		s, err := alice.PortForward(ctx, "virtualmachineinstances", "default", "web", p, "tcp")
		must(t, err)
		defer s.Close()
		_, err = s.Write([]byte("ping\n"))
		must(t, err)
		got := make([]byte, 5)
		_, err = io.ReadFull(s, got)
		must(t, err)
		if string(got) != "ping\n" {
			t.Errorf("portforward echo %q", got)
		}
		// KubeVirt's client: a websocket of binary messages, subprotocol
		// plain.kubevirt.io.
		conn := dialStream(t, w.alice, vmiPath("web", "portforward/"+port))
		defer conn.Close()
		must(t, conn.WriteMessage(websocket.BinaryMessage, []byte("kubevirt")))
		var echoed []byte
		for len(echoed) < len("kubevirt") {
			typ, b, err := conn.ReadMessage()
			must(t, err)
			if typ != websocket.BinaryMessage {
				t.Fatalf("message type %d, want binary", typ)
			}
			echoed = append(echoed, b...)
		}
		if string(echoed) != "kubevirt" {
			t.Errorf("portforward echo to KubeVirt's client %q", echoed)
		}
		// RBAC sees the subresource portforward, without port or protocol.
		_, resp, err := dialer(t, w.bob).Dial(wsURL(w.bob, vmiPath("web", "portforward/"+port+"/tcp")), nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("bob's portforward: %v, %v; want 403", err, resp)
		}
		b, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(b), `resource \"virtualmachineinstances/portforward\"`) {
			t.Errorf("bob's portforward refusal %s does not name virtualmachineinstances/portforward", b)
		}
		png, err := alice.Screenshot(ctx, "default", "web")
		if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
			t.Errorf("alice's screenshot: %d bytes, %v; want a PNG", len(png), err)
		}
		// The apiserver itself authorizes the first segment after the name
		// (virtualmachineinstances/vnc) before it proxies; the API then asks
		// for vnc/screenshot (TestSubresourceAttributes).
		if code, st := call(t, w.bob, "GET", vmiPath("web", "vnc/screenshot"), ""); code != 403 || !strings.Contains(st.Message, `"virtualmachineinstances/vnc"`) {
			t.Errorf("bob's screenshot: %d %q, want 403", code, st.Message)
		}
	})

	t.Run("only the aggregator may vouch for a user", func(t *testing.T) {
		for _, c := range []struct {
			name string
			cert []tls.Certificate
		}{
			{"no client certificate", nil},
			{"a certificate of the right CA with a name not allowed", []tls.Certificate{w.agg.IssueClientCert(t, "intruder")}},
		} {
			hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: c.cert}}}
			req, _ := http.NewRequest("PUT", fmt.Sprintf("https://localhost:%d%s", w.agg.Port, vmPath("halted", "stop")), strings.NewReader("{}"))
			req.Header.Set("X-Remote-User", "system:admin")
			req.Header.Set("X-Remote-Group", "system:masters")
			resp, err := hc.Do(req)
			must(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 401 {
				t.Errorf("%s: %d %s, want 401", c.name, resp.StatusCode, b)
			}
		}
	})
}

func wsURL(cfg *rest.Config, path string) string {
	return strings.Replace(strings.TrimSuffix(cfg.Host, "/"), "https://", "wss://", 1) + path
}

func dialer(t *testing.T, cfg *rest.Config) *websocket.Dialer {
	tlsCfg, err := rest.TLSConfigFor(cfg)
	must(t, err)
	return &websocket.Dialer{TLSClientConfig: tlsCfg, Subprotocols: []string{"plain.kubevirt.io"}, HandshakeTimeout: 10 * time.Second}
}

// dialStream opens a console or VNC websocket through the apiserver, as
// KubeVirt's virtctl does.
func dialStream(t *testing.T, cfg *rest.Config, path string) *websocket.Conn {
	t.Helper()
	conn, resp, err := dialer(t, cfg).Dial(wsURL(cfg, path), nil)
	if err != nil {
		body := ""
		if resp != nil {
			b, _ := io.ReadAll(resp.Body)
			body = fmt.Sprintf("%d %s", resp.StatusCode, b)
		}
		t.Fatalf("websocket %s: %v %s", path, err, body)
	}
	if conn.Subprotocol() != "plain.kubevirt.io" {
		t.Errorf("subprotocol %q", conn.Subprotocol())
	}
	return conn
}
