package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/internal/testenv"
)

// dayTwoVerbs proves the verbs a user runs on a running VM, with the
// virtctl binary through the aggregated API: port-forward reaches the
// guest's web server from a local port, vnc screenshot saves its display
// as a PNG, and expose makes a Service whose endpoints are the launcher
// pod.
func (w *world) dayTwoVerbs(ctx context.Context, t *testing.T, vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) {
	t.Helper()

	// port-forward: a free local port to the guest's port 80.
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	cmd := exec.CommandContext(pctx, testenv.Output(t, "bin", "virtctl"), "port-forward", "vm/"+vm.Name+"/"+vm.Namespace, "0:80", "--kubeconfig", w.kubeconfig)
	out, err := cmd.StdoutPipe()
	must(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	defer func() {
		stop()
		_ = cmd.Wait()
	}()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := regexp.MustCompile(`^Forwarding from (\S+) -> 80 \(tcp\)$`).FindStringSubmatch(sc.Text()); m != nil {
				lines <- m[1]
			}
		}
	}()
	select {
	case addr := <-lines:
		httpAnswers(ctx, t, "http://"+addr+"/", "tiny")
	case <-time.After(30 * time.Second):
		t.Fatalf("virtctl port-forward printed no Forwarding line; stderr %q", stderr.String())
	}
	stop()

	// vnc screenshot: the guest's display as a PNG.
	shot := filepath.Join(t.TempDir(), "tiny.png")
	w.virtctl(ctx, t, "vnc", "screenshot", vmi.Name, "-n", vmi.Namespace, "-f", shot)
	b, err := os.ReadFile(shot)
	must(t, err)
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the screenshot (%d bytes) is not a PNG: %v", len(b), err)
	}
	if r := img.Bounds(); r.Dx() < 320 || r.Dy() < 200 {
		t.Errorf("screenshot of %v, want a display of at least 320x200", r)
	}

	// The guest agent: AgentConnected, the guest's OS and NIC name in the
	// status, and guestosinfo, userlist and fslist through virtctl.
	agent := w.waitAgent(ctx, t, vmi)
	if agent.Status.GuestOSInfo.ID != "virtkit" || len(agent.Status.Interfaces) == 0 || agent.Status.Interfaces[0].InterfaceName != "eth0" {
		t.Errorf("with the agent: guestOSInfo %+v, interfaces %+v; want the test guest's OS and eth0", agent.Status.GuestOSInfo, agent.Status.Interfaces)
	}
	infoOut := w.virtctlOut(ctx, t, "guestosinfo", vmi.Name, "-n", vmi.Namespace)
	var info virtv1.VirtualMachineInstanceGuestAgentInfo
	if err := json.Unmarshal(infoOut, &info); err != nil || info.Hostname != "tiny" || info.OS.PrettyName != "virtkit test guest 1" || info.GAVersion == "" {
		t.Errorf("virtctl guestosinfo: %v\n%s", err, infoOut)
	}
	var users virtv1.VirtualMachineInstanceGuestOSUserList
	if out := w.virtctlOut(ctx, t, "userlist", vmi.Name, "-n", vmi.Namespace); json.Unmarshal(out, &users) != nil || users.Items == nil {
		t.Errorf("virtctl userlist: %s", out)
	}
	var fss virtv1.VirtualMachineInstanceFileSystemList
	if out := w.virtctlOut(ctx, t, "fslist", vmi.Name, "-n", vmi.Namespace); json.Unmarshal(out, &fss) != nil || fss.Items == nil {
		t.Errorf("virtctl fslist: %s", out)
	}

	// expose: a Service whose endpoints are the launcher pod's address.
	w.virtctl(ctx, t, "expose", "vm", vm.Name, "-n", vm.Namespace, "--name="+vm.Name+"-http", "--port=80")
	svc := &corev1.Service{}
	must(t, w.c.Get(ctx, client.ObjectKey{Namespace: vm.Namespace, Name: vm.Name + "-http"}, svc))
	defer func() { _ = w.c.Delete(context.Background(), svc) }()
	eventually(ctx, t, "the Service's endpoints holding the pod's address", func() (bool, string) {
		var slices discoveryv1.EndpointSliceList
		if err := w.c.List(ctx, &slices, client.InNamespace(vm.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: svc.Name}); err != nil {
			return false, err.Error()
		}
		var got []string
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				got = append(got, strings.Join(e.Addresses, ","))
			}
		}
		return strings.Contains(strings.Join(got, " "), vmi.Status.Interfaces[0].IP), fmt.Sprintf("endpoints %v, want %s", got, vmi.Status.Interfaces[0].IP)
	})
}

// waitAgent waits for vmi's AgentConnected condition and returns the VMI.
func (w *world) waitAgent(ctx context.Context, t *testing.T, vmi *virtv1.VirtualMachineInstance) *virtv1.VirtualMachineInstance {
	t.Helper()
	v := &virtv1.VirtualMachineInstance{}
	eventually(ctx, t, "VMI "+vmi.Name+" AgentConnected", func() (bool, string) {
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(vmi), v); err != nil {
			return false, err.Error()
		}
		for _, c := range v.Status.Conditions {
			if c.Type == virtv1.VirtualMachineInstanceAgentConnected && c.Status == corev1.ConditionTrue {
				return true, ""
			}
		}
		return false, fmt.Sprintf("conditions %+v", v.Status.Conditions)
	})
	return v
}

// virtctlOut runs the virtctl binary and returns its standard output.
func (w *world) virtctlOut(ctx context.Context, t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(ctx, testenv.Output(t, "bin", "virtctl"), append(args, "--kubeconfig", w.kubeconfig)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("virtctl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}
