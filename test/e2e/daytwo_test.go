package e2e

import (
	"bufio"
	"bytes"
	"context"
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
