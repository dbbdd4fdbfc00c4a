package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/virtapi/subresources"
)

func status(code int32, msg string, details *metav1.StatusDetails) error {
	return &subresources.StatusError{Status: metav1.Status{Code: code, Message: msg, Details: details}}
}

func pvc(ns, name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func hotplugPVC(claim string) *virtv1.HotplugVolumeSource {
	return &virtv1.HotplugVolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}, Hotpluggable: true}}
}

// Each command line becomes the request KubeVirt's virtctl sends for it,
// in the namespace kubectl would use, and prints KubeVirt's line.
func TestCommandsSendKubeVirtsRequests(t *testing.T) {
	dry := []string{"All"}
	cases := []struct {
		name   string
		ctxNS  string // namespace of the kubeconfig's context
		args   string
		want   []call
		stdout string
	}{
		{name: "start", args: "start vm1",
			want: []call{{"Start", "default", "vm1", virtv1.StartOptions{}}}, stdout: "VM vm1 was scheduled to start\n"},
		{name: "start paused, dry run", args: "start vm1 --paused --dry-run",
			want:   []call{{"Start", "default", "vm1", virtv1.StartOptions{Paused: true, DryRun: dry}}},
			stdout: "Dry Run execution\nVM vm1 was scheduled to start\n"},
		{name: "-n before the command", args: "-n team start vm1",
			want: []call{{"Start", "team", "vm1", virtv1.StartOptions{}}}, stdout: "VM vm1 was scheduled to start\n"},
		{name: "--namespace after the argument", args: "start vm1 --namespace=team",
			want: []call{{"Start", "team", "vm1", virtv1.StartOptions{}}}, stdout: "VM vm1 was scheduled to start\n"},
		{name: "the kubeconfig context's namespace", ctxNS: "ctx-ns", args: "start vm1",
			want: []call{{"Start", "ctx-ns", "vm1", virtv1.StartOptions{}}}, stdout: "VM vm1 was scheduled to start\n"},
		{name: "-n beats the context's namespace", ctxNS: "ctx-ns", args: "start -n team vm1",
			want: []call{{"Start", "team", "vm1", virtv1.StartOptions{}}}, stdout: "VM vm1 was scheduled to start\n"},
		{name: "stop", args: "stop vm1",
			want: []call{{"Stop", "default", "vm1", virtv1.StopOptions{}}}, stdout: "VM vm1 was scheduled to stop\n"},
		{name: "force stop", args: "stop vm1 --force --grace-period=0",
			want: []call{{"Stop", "default", "vm1", virtv1.StopOptions{GracePeriod: new(int64(0))}}}, stdout: "VM vm1 was scheduled to stop\n"},
		{name: "force stop with a grace period, dry run", args: "stop vm1 --force --grace-period 30 --dry-run",
			want:   []call{{"Stop", "default", "vm1", virtv1.StopOptions{GracePeriod: new(int64(30)), DryRun: dry}}},
			stdout: "Dry Run execution\nVM vm1 was scheduled to stop\n"},
		{name: "restart", args: "restart vm1",
			want: []call{{"Restart", "default", "vm1", virtv1.RestartOptions{}}}, stdout: "VM vm1 was scheduled to restart\n"},
		{name: "force restart", args: "restart vm1 --force --grace-period=0",
			want: []call{{"Restart", "default", "vm1", virtv1.RestartOptions{GracePeriodSeconds: new(int64(0))}}}, stdout: "VM vm1 was scheduled to restart\n"},
		{name: "pause vm", args: "pause vm vm1",
			want: []call{{"Pause", "default", "vm1", virtv1.PauseOptions{}}}, stdout: "VMI vm1 was scheduled to pause\n"},
		{name: "pause VMI (any case), dry run", args: "pause VirtualMachineInstance vm1 --dry-run",
			want: []call{{"Pause", "default", "vm1", virtv1.PauseOptions{DryRun: dry}}}, stdout: "Dry Run execution\nVMI vm1 was scheduled to pause\n"},
		{name: "unpause", args: "unpause vmi vm1",
			want: []call{{"Unpause", "default", "vm1", virtv1.UnpauseOptions{}}}, stdout: "VMI vm1 was scheduled to unpause\n"},
		{name: "soft-reboot", args: "soft-reboot vm1",
			want: []call{{"SoftReboot", "default", "vm1", nil}}, stdout: "VMI vm1 was scheduled to soft-reboot\n"},
		{name: "reset", args: "reset vm1",
			want: []call{{"Reset", "default", "vm1", nil}}, stdout: "VMI vm1 was scheduled to reset\n"},
		{name: "migrate", args: "migrate vm1",
			want: []call{{"Migrate", "default", "vm1", virtv1.MigrateOptions{}}}, stdout: "VM vm1 was scheduled to migrate\n"},
		{name: "migrate with a node selector", args: "migrate vm1 --addedNodeSelector zone=b,disk=ssd",
			want:   []call{{"Migrate", "default", "vm1", virtv1.MigrateOptions{AddedNodeSelector: map[string]string{"zone": "b", "disk": "ssd"}}}},
			stdout: "VM vm1 was scheduled to migrate\n"},
		{name: "addvolume to the VM, which hotplugs it", args: "addvolume vm1 --volume-name=data",
			want: []call{{"AddVolume", "default", "vm1", virtv1.AddVolumeOptions{Name: "data",
				Disk: &virtv1.Disk{Serial: "data", DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: "scsi"}}}, VolumeSource: hotplugPVC("data")}}},
			stdout: "Successfully submitted add volume request to VM vm1 for volume data\n"},
		{name: "addvolume with the deprecated --persist, as a LUN with a serial and a cache mode", args: "addvolume vm1 --volume-name=data --persist --serial=S1 --disk-type=lun --cache=none --disk-name=d",
			want: []call{{"AddVolume", "default", "vm1", virtv1.AddVolumeOptions{Name: "d",
				Disk: &virtv1.Disk{Serial: "S1", Cache: "none", DiskDevice: virtv1.DiskDevice{LUN: &virtv1.LunTarget{Bus: "scsi"}}}, VolumeSource: hotplugPVC("data")}}},
			stdout: "Successfully submitted add volume request to VM vm1 for volume data\n"},
		{name: "addvolume on virtio, dry run", args: "addvolume vm1 --volume-name=data --bus=virtio --dry-run",
			want: []call{{"AddVolume", "default", "vm1", virtv1.AddVolumeOptions{Name: "data", DryRun: dry,
				Disk: &virtv1.Disk{Serial: "data", DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: "virtio"}}}, VolumeSource: hotplugPVC("data")}}},
			stdout: "Dry Run execution\nSuccessfully submitted add volume request to VM vm1 for volume data\n"},
		{name: "removevolume from the VM, which unplugs it", args: "removevolume vm1 --volume-name=data",
			want:   []call{{"RemoveVolume", "default", "vm1", virtv1.RemoveVolumeOptions{Name: "data"}}},
			stdout: "Successfully submitted remove volume request to VM vm1 for volume data\n"},
		{name: "removevolume with the deprecated --persist", args: "removevolume vm1 --volume-name=data --persist --dry-run",
			want:   []call{{"RemoveVolume", "default", "vm1", virtv1.RemoveVolumeOptions{Name: "data", DryRun: dry}}},
			stdout: "Dry Run execution\nSuccessfully submitted remove volume request to VM vm1 for volume data\n"},
		{name: "version", args: "version",
			want: []call{{"Version", "", "", nil}},
			stdout: `Client Version: version.Info{GitVersion:"v1.2.3-client", GitCommit:"", GitTreeState:"", BuildDate:"", GoVersion:"go1.x", Compiler:"gc", Platform:"linux/amd64"}` + "\n" +
				`Server Version: version.Info{GitVersion:"v9.9.9", GitCommit:"", GitTreeState:"", BuildDate:"", GoVersion:"", Compiler:"", Platform:""}` + "\n"},
		{name: "client version only", args: "version --client",
			stdout: `Client Version: version.Info{GitVersion:"v1.2.3-client", GitCommit:"", GitTreeState:"", BuildDate:"", GoVersion:"go1.x", Compiler:"gc", Platform:"linux/amd64"}` + "\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.ctxNS, pvc("default", "data"))
			h.api.version = subresources.VersionInfo{GitVersion: "v9.9.9"}
			if code := h.run(strings.Fields(c.args)...); code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", code, h.stderr)
			}
			if diff := cmp.Diff(c.want, h.api.recorded()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.stdout, h.stdout.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if h.stderr.String() != "" {
				t.Errorf("stderr: %q", h.stderr)
			}
		})
	}
}

// A VMI that no VM owns gets its volume requests itself, as with
// KubeVirt's virtctl: the VM's endpoint answers that there is no such VM.
func TestVolumeOfAStandaloneVMI(t *testing.T) {
	h := newHarness(t, "", pvc("default", "data"))
	notFound := status(404, `virtualmachine.kubevirt.io "solo" not found`, &metav1.StatusDetails{Name: "solo", Group: "kubevirt.io", Kind: "virtualmachine"})
	h.api.errs = map[string]error{"AddVolume": notFound, "RemoveVolume": notFound}
	if code := h.run("addvolume", "solo", "--volume-name=data"); code != 0 {
		t.Fatalf("addvolume: exit %d; stderr:\n%s", code, h.stderr)
	}
	if code := h.run("removevolume", "solo", "--volume-name=data"); code != 0 {
		t.Fatalf("removevolume: exit %d; stderr:\n%s", code, h.stderr)
	}
	var methods []string
	for _, c := range h.api.recorded() {
		methods = append(methods, c.Method)
	}
	if d := cmp.Diff([]string{"AddVolume", "AddVMIVolume", "RemoveVolume", "RemoveVMIVolume"}, methods); d != "" {
		t.Errorf("requests (-want +got):\n%s", d)
	}
}

// Command lines virtctl refuses say why and where to look, and send nothing.
func TestCommandLineErrors(t *testing.T) {
	cases := []struct{ args, stderr string }{
		{"start", "Error: wrong number of arguments: 'virtctl start (VM)' takes 1, got 0\nSee 'virtctl start --help' for usage.\n"},
		{"start a b", "Error: wrong number of arguments: 'virtctl start (VM)' takes 1, got 2: a b\nSee 'virtctl start --help' for usage.\n"},
		{"stop vm1 --force", "Error: Must both use --force=true and set --grace-period.\nSee 'virtctl stop --help' for usage.\n"},
		{"restart vm1 --grace-period=0", "Error: Must both use --force=true and set --grace-period.\nSee 'virtctl restart --help' for usage.\n"},
		{"start vm1 --bogus", "Error: unknown flag: --bogus\nSee 'virtctl start --help' for usage.\n"},
		{"frobnicate vm1", "Error: unknown command \"frobnicate\"\nSee 'virtctl help' for usage.\n"},
		{"--bogus start vm1", "Error: unknown flag: --bogus\nSee 'virtctl help' for usage.\n"},
		{"pause pod vm1", "Error: unknown resource type \"pod\": use vm or vmi, as in 'virtctl pause vm NAME'\nSee 'virtctl pause --help' for usage.\n"},
		{"pause vm1", "Error: wrong number of arguments: 'virtctl pause vm|vmi (VM)|(VMI)' takes 2, got 1: vm1\nSee 'virtctl pause --help' for usage.\n"},
		{"addvolume vm1", "Error: --volume-name is required: the PersistentVolumeClaim to attach\nSee 'virtctl addvolume --help' for usage.\n"},
		{"addvolume vm1 --volume-name=data --disk-type=cdrom", "Error: invalid --disk-type \"cdrom\": use disk or lun\nSee 'virtctl addvolume --help' for usage.\n"},
		{"addvolume vm1 --volume-name=data --disk-type=lun --bus=virtio", "Error: invalid --bus \"virtio\" for a LUN: only scsi\nSee 'virtctl addvolume --help' for usage.\n"},
		{"addvolume vm1 --volume-name=data --cache=unsafe", "Error: invalid --cache \"unsafe\": use none, writethrough or writeback\nSee 'virtctl addvolume --help' for usage.\n"},
		{"addvolume vm1 --volume-name=" + strings.Repeat("x", 64), "Error: the disk name \"" + strings.Repeat("x", 64) + "\" is longer than 63 characters: give a shorter one with --disk-name\nSee 'virtctl addvolume --help' for usage.\n"},
		{"removevolume vm1", "Error: --volume-name is required: the volume to detach\nSee 'virtctl removevolume --help' for usage.\n"},
		{"version extra", "Error: wrong number of arguments: 'virtctl version' takes 0, got 1: extra\nSee 'virtctl version --help' for usage.\n"},
	}
	for _, c := range cases {
		t.Run(c.args, func(t *testing.T) {
			h := newHarness(t, "")
			if code := h.run(strings.Fields(c.args)...); code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if diff := cmp.Diff(c.stderr, h.stderr.String()); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
			if calls := h.api.recorded(); len(calls) != 0 {
				t.Errorf("sent %v", calls)
			}
		})
	}
}

// A refusal of the server is printed with what to do about it.
func TestServerErrorsSayWhatToDo(t *testing.T) {
	forbidden := `User "bob" cannot update resource "virtualmachines/start" in API group "subresources.kubevirt.io" in the namespace "default"; ask for a Role granting verb "update" on "virtualmachines/start" in API group "subresources.kubevirt.io" (KubeVirt's kubevirt.io:edit ClusterRole has it)`
	cases := []struct {
		name, args, method string
		err                error
		stderr             string
	}{
		{name: "403 names the verb, how to check and the role to bind", args: "start vm1", method: "Start",
			err: status(403, forbidden, nil),
			stderr: "Error: cannot start VirtualMachine default/vm1: " + forbidden + "\n" +
				`You need verb "update" on "virtualmachines/start" in API group "subresources.kubevirt.io" (check: ` +
				"`kubectl auth can-i update virtualmachines.subresources.kubevirt.io --subresource=start -n default`). " +
				"A cluster admin can grant every virtctl verb in namespace default with:\n" +
				"  kubectl create rolebinding bob-virtctl --clusterrole=kubevirt.io:subresources-edit --user=bob -n default\n"},
		{name: "403 on migrate names the migrate role, not the edit role", args: "migrate vm1", method: "Migrate",
			err: status(403, `User "bob" cannot update resource "virtualmachines/migrate" in API group "subresources.kubevirt.io" in the namespace "default"`, nil),
			stderr: "Error: cannot migrate VirtualMachine default/vm1: " +
				`User "bob" cannot update resource "virtualmachines/migrate" in API group "subresources.kubevirt.io" in the namespace "default"` + "\n" +
				`You need verb "update" on "virtualmachines/migrate" in API group "subresources.kubevirt.io" (check: ` +
				"`kubectl auth can-i update virtualmachines.subresources.kubevirt.io --subresource=migrate -n default`). " +
				"Migration is not part of the edit role; a cluster admin can grant it in namespace default with:\n" +
				"  kubectl create rolebinding bob-migrate --clusterrole=kubevirt.io:migrate --user=bob -n default\n"},
		{name: "404 of a VM says how to list them", args: "stop nosuchvm", method: "Stop",
			err: status(404, `virtualmachine.kubevirt.io "nosuchvm" not found`, &metav1.StatusDetails{Name: "nosuchvm", Group: "kubevirt.io", Kind: "virtualmachine"}),
			stderr: `Error: cannot stop VirtualMachine default/nosuchvm: virtualmachine.kubevirt.io "nosuchvm" not found` + "\n" +
				"There is no VirtualMachine \"nosuchvm\" in namespace default: `kubectl get vms -n default` lists them; -n NAMESPACE picks another namespace.\n"},
		{name: "404 of a VMI says how to start it", args: "pause vm vm1", method: "Pause",
			err: status(404, `virtualmachineinstance.kubevirt.io "vm1" not found`, &metav1.StatusDetails{Name: "vm1", Group: "kubevirt.io", Kind: "virtualmachineinstance"}),
			stderr: `Error: cannot pause VirtualMachineInstance default/vm1: virtualmachineinstance.kubevirt.io "vm1" not found` + "\n" +
				"VirtualMachineInstance \"vm1\" does not run in namespace default: `kubectl get vms,vmis -n default` shows what exists; `virtctl start vm1 -n default` starts a VM.\n"},
		{name: "404 without details: the API is not served", args: "start vm1", method: "Start",
			err: status(404, "the server could not find the requested resource", &metav1.StatusDetails{}),
			stderr: "Error: cannot start VirtualMachine default/vm1: the server could not find the requested resource\n" +
				"The API server does not serve subresources.kubevirt.io/v1: is virt-api installed (`virt-api --install` registers it)? `kubectl get apiservice v1.subresources.kubevirt.io` shows it.\n"},
		{name: "409 is the server's word", args: "start vm1", method: "Start",
			err:    status(409, "VM is already running", nil),
			stderr: "Error: cannot start VirtualMachine default/vm1: VM is already running\n"},
		{name: "503 of the aggregator points at virt-api", args: "soft-reboot vm1", method: "SoftReboot",
			err: status(503, "service unavailable", nil),
			stderr: "Error: cannot soft-reboot VirtualMachineInstance default/vm1: service unavailable\n" +
				"The subresources.kubevirt.io API does not answer: check that virt-api runs and that `kubectl get apiservice v1.subresources.kubevirt.io` says Available.\n"},
		{name: "503 of a node's handler is virt-api's word", args: "unpause vm vm1", method: "Unpause",
			err:    status(503, "unpause of VirtualMachineInstance default/vm1 on node n: unreachable; check that virt-handler runs on node n", nil),
			stderr: "Error: cannot unpause VirtualMachineInstance default/vm1: unpause of VirtualMachineInstance default/vm1 on node n: unreachable; check that virt-handler runs on node n\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, "")
			h.api.errs[c.method] = c.err
			if code := h.run(strings.Fields(c.args)...); code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if diff := cmp.Diff(c.stderr, h.stderr.String()); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
			if h.stdout.String() != "" {
				t.Errorf("stdout %q", h.stdout)
			}
		})
	}
}

// Without a reachable API server the error names the kubeconfig that
// pointed there.
func TestUnreachableServerNamesTheKubeconfig(t *testing.T) {
	h := newHarness(t, "")
	h.connect = realConnect
	if code := h.run("start", "vm1"); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	got := h.stderr.String()
	for _, want := range []string{
		"Error: cannot start VirtualMachine default/vm1: start default/vm1: Put \"https://127.0.0.1:1/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachines/vm1/start\": dial tcp 127.0.0.1:1: connect: connection refused\n",
		`Cannot reach the API server https://127.0.0.1:1 (context "test" of kubeconfig ` + h.kubeconfig + " ($KUBECONFIG)): is the cluster running? With virt-local, `make run` starts it and prints the KUBECONFIG to use.\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("stderr lacks %q:\n%s", want, got)
		}
	}
}

func TestNoKubeconfig(t *testing.T) {
	advice := "Point virtctl at a cluster as you would kubectl: with virt-local, run `make run` and the `export KUBECONFIG=...` it prints\n"
	for _, c := range []struct{ env, flag, stderr string }{
		{stderr: "Error: no kubeconfig: --kubeconfig is not set, $KUBECONFIG is empty and /nonexistent/.kube/config does not exist\n" + advice},
		{env: "/nope/a:/nope/b", stderr: "Error: no kubeconfig: $KUBECONFIG names /nope/a:/nope/b, which does not exist or names no cluster\n" + advice},
		{flag: "/nope/c", stderr: "Error: loading kubeconfig /nope/c (--kubeconfig): stat /nope/c: no such file or directory\n"},
	} {
		h := newHarness(t, "")
		h.kubeconfig = c.env
		args := []string{"start", "vm1"}
		if c.flag != "" {
			args = append(args, "--kubeconfig", c.flag)
		}
		if code := h.run(args...); code != 1 {
			t.Errorf("%v: exit %d, want 1", args, code)
		}
		if diff := cmp.Diff(c.stderr, h.stderr.String()); diff != "" {
			t.Errorf("%+v: stderr (-want +got):\n%s", c, diff)
		}
	}
}

// addvolume needs an existing claim, as KubeVirt's virtctl does.
func TestAddVolumeOfAMissingClaim(t *testing.T) {
	h := newHarness(t, "")
	if code := h.run("addvolume", "vm1", "--volume-name=nope"); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	want := "Error: cannot addvolume to VirtualMachine default/vm1: Volume nope is not a DataVolume or PersistentVolumeClaim\n" +
		"Create the claim first; `kubectl get pvc -n default` lists the claims.\n"
	if diff := cmp.Diff(want, h.stderr.String()); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
	if calls := h.api.recorded(); len(calls) != 0 {
		t.Errorf("sent %v", calls)
	}
}

// evacuate-cancel calls evacuatecancel on a VM, a VMI, or every VMI a
// drain of a node marked, in any namespace, in KubeVirt's words.
func TestEvacuateCancel(t *testing.T) {
	vmi := func(ns, name, node string) *virtv1.VirtualMachineInstance {
		return &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Status: virtv1.VirtualMachineInstanceStatus{NodeName: node, EvacuationNodeName: node}}
	}
	objs := []client.Object{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}},
		vmi("default", "a1", "node-a"), vmi("team", "a2", "node-a"), vmi("default", "b1", "node-b")}
	dry := []string{"All"}
	cases := []struct {
		name, args string
		code       int
		want       []call
		stdout     string
		stderr     string
	}{
		{name: "vm", args: "evacuate-cancel vm/vm1", want: []call{{"EvacuateCancel", "default", "vm1", virtv1.EvacuateCancelOptions{}}},
			stdout: "VM default/vm1 was canceled evacuation\n"},
		{name: "vmi, dry run", args: "evacuate-cancel vmi/vm1 --dry-run", want: []call{{"EvacuateCancelVMI", "default", "vm1", virtv1.EvacuateCancelOptions{DryRun: dry}}},
			stdout: "Dry Run execution\nVMI default/vm1 was canceled evacuation\n"},
		{name: "node", args: "evacuate-cancel node/node-a",
			want:   []call{{"EvacuateCancelVMI", "default", "a1", virtv1.EvacuateCancelOptions{}}, {"EvacuateCancelVMI", "team", "a2", virtv1.EvacuateCancelOptions{}}},
			stdout: "VMI default/a1 was canceled evacuation\nVMI team/a2 was canceled evacuation\n"},
		{name: "no such node", args: "evacuate-cancel node/node-x", code: 1, stderr: "cannot evacuate-cancel node node-x"},
		{name: "no kind", args: "evacuate-cancel vm1", code: 1, stderr: "target must contain type and name separated by '/'"},
		{name: "another kind", args: "evacuate-cancel pod/p1", code: 1, stderr: "unsupported resource type 'pod'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var fresh []client.Object
			for _, o := range objs {
				fresh = append(fresh, o.DeepCopyObject().(client.Object))
			}
			h := newHarness(t, "", fresh...)
			if code := h.run(strings.Fields(c.args)...); code != c.code {
				t.Errorf("exit %d, want %d; stderr %s", code, c.code, h.stderr)
			}
			if diff := cmp.Diff(c.want, h.api.recorded()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.stdout, h.stdout.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if !strings.Contains(h.stderr.String(), c.stderr) {
				t.Errorf("stderr %q, want %q in it", h.stderr, c.stderr)
			}
		})
	}
}

// migrate-cancel deletes the one migration of the VMI that has not ended.
func TestMigrateCancel(t *testing.T) {
	mig := func(name, vmi string, phase virtv1.VirtualMachineInstanceMigrationPhase) *virtv1.VirtualMachineInstanceMigration {
		return &virtv1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: virtv1.VirtualMachineInstanceMigrationSpec{VMIName: vmi}, Status: virtv1.VirtualMachineInstanceMigrationStatus{Phase: phase}}
	}
	objs := []client.Object{mig("done", "vm1", virtv1.MigrationSucceeded), mig("running", "vm1", virtv1.MigrationRunning), mig("other", "vm2", virtv1.MigrationRunning)}
	cases := []struct {
		name, args string
		code       int
		stdout     string
		stderr     string
		left       []string
	}{
		{name: "cancels the running one", args: "migrate-cancel vm1", stdout: "VM vm1 was scheduled to migrate-cancel\n", left: []string{"done", "other"}},
		{name: "dry run deletes nothing", args: "migrate-cancel vm1 --dry-run", stdout: "Dry Run execution\nVM vm1 was scheduled to migrate-cancel\n", left: []string{"done", "other", "running"}},
		{name: "none to cancel", args: "migrate-cancel vm3", code: 1, left: []string{"done", "other", "running"},
			stderr: "Error: Found no migration to cancel for vm3\n`kubectl get vmims -n default` lists the migrations and their phases; only one that has not ended can be cancelled.\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var fresh []client.Object
			for _, o := range objs {
				fresh = append(fresh, o.DeepCopyObject().(client.Object))
			}
			h := newHarness(t, "", fresh...)
			if code := h.run(strings.Fields(c.args)...); code != c.code {
				t.Errorf("exit %d, want %d; stderr %s", code, c.code, h.stderr)
			}
			if diff := cmp.Diff(c.stdout, h.stdout.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.stderr, h.stderr.String()); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
			var list virtv1.VirtualMachineInstanceMigrationList
			if err := h.kube.List(t.Context(), &list); err != nil {
				t.Fatal(err)
			}
			var left []string
			for _, m := range list.Items {
				left = append(left, m.Name)
			}
			if diff := cmp.Diff(c.left, left); diff != "" {
				t.Errorf("migrations left (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{nil, {"help"}, {"--help"}, {"help", "stop"}, {"stop", "--help"}, {"options"}} {
		h := newHarness(t, "")
		if code := h.run(args...); code != 0 {
			t.Errorf("%v: exit %d", args, code)
		}
		if !strings.Contains(h.stdout.String(), "virtctl") && !strings.Contains(h.stdout.String(), "--kubeconfig") {
			t.Errorf("%v: no help: %q", args, h.stdout)
		}
	}
	h := newHarness(t, "")
	h.run("stop", "--help")
	for _, want := range []string{"Usage:\n  virtctl stop (VM) [flags]", "--grace-period int", "--force", "virtctl stop tiny --force --grace-period=0"} {
		if !strings.Contains(h.stdout.String(), want) {
			t.Errorf("stop --help lacks %q:\n%s", want, h.stdout)
		}
	}
	h = newHarness(t, "")
	h.run("options")
	for _, want := range []string{"--kubeconfig string", "-n, --namespace string", "--context string"} {
		if !strings.Contains(h.stdout.String(), want) {
			t.Errorf("options lacks %q:\n%s", want, h.stdout)
		}
	}
}
