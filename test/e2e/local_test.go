package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit/internal/localcluster"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testguest"
	"github.com/virtkit/virtkit/local/cluster"
	"github.com/virtkit/virtkit/virtapi/subresources"
)

type world struct {
	data       string // the data directory
	cfg        cluster.Config
	registry   string // host:port of its registry
	c          client.Client
	sub        *subresources.Client
	kubeconfig string
	rest       *rest.Config
	metrics    string // host:port of its /metrics
	cluster    *cluster.Cluster
}

// manifestRegistry is the registry the example manifests name, virt-local's
// default address; the tests' virt-local listens on a free port instead,
// so that it runs next to the one of `make run`.
const manifestRegistry = "localhost:5000/"

// up starts virt-local from an empty data directory with the test guest
// pushed to its registry as the manifest's containerDisk, with one local
// node, or with the nodes named (names of their own, see nodeName).
func up(t *testing.T, nodes ...string) *world {
	t.Helper()
	if len(nodes) == 0 {
		nodes = []string{nodeName("node")}
	}
	return worldOf(t, localcluster.ForTest(t, localcluster.Options{Nodes: nodes}))
}

// worldOf is the world of a started cluster.
func worldOf(t *testing.T, c *localcluster.Cluster) *world {
	t.Helper()
	w := &world{data: c.DataDir, cfg: c.Cluster.Config(), registry: c.Registry(), c: c.Client, kubeconfig: c.Kubeconfig(), rest: c.RESTConfig(), metrics: c.MetricsAddr(),
		cluster: c.Cluster}
	var err error
	w.sub, err = subresources.NewClient(c.RESTConfig())
	must(t, err)
	return w
}

// nodeName is a node name of this test process's own: a virt-local of
// `make run` may be up on this machine.
func nodeName(suffix string) string {
	return strings.TrimSuffix(testenv.NamePrefix(), "-") + "-" + suffix
}

// TestVMTiny proves virt-local on the example manifest: it runs, its
// console shows the guest's markers through the apiserver, its web server
// answers through the pod network and through `virtctl port-forward`, its
// screen through `virtctl vnc screenshot`, `virtctl expose` makes its
// Service, virt-local's /metrics has its series,
// `virtctl stop` (the binary) ends it gracefully and `virtctl
// start` boots it again, and deleting the VM leaves nothing behind.
func TestVMTiny(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	vm := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
	must(t, w.c.Create(ctx, vm))

	vmi := w.waitRunning(ctx, t, vm)
	if len(vmi.Status.Interfaces) == 0 || vmi.Status.Interfaces[0].IP == "" {
		t.Fatalf("VMI interfaces = %+v, want the pod IP", vmi.Status.Interfaces)
	}
	w.consoleShows(ctx, t, vmi, "VIRTKIT-HEARTBEAT")
	serial := w.serialLog(ctx, t, vmi)
	waitFile(ctx, t, serial, "VIRTKIT-HOSTNAME tiny")
	waitFile(ctx, t, serial, "hello from tiny") // cloud-init's user data ran
	httpAnswers(ctx, t, "http://"+vmi.Status.Interfaces[0].IP+"/", "tiny")
	w.dayTwoVerbs(ctx, t, vm, vmi)

	// /metrics: every component's series, for the running VMI (docs/metrics.md).
	vmiLabels := map[string]string{"namespace": vmi.Namespace, "name": vmi.Name, "node": vmi.Status.NodeName}
	eventually(ctx, t, "the documented series on http://"+w.metrics+"/metrics", func() (bool, string) {
		resp, err := http.Get("http://" + w.metrics + "/metrics")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(resp.Body)
		if err != nil {
			return false, err.Error()
		}
		// value is the value of name's series with labels (and maybe
		// others), -1 when there is none.
		value := func(name string, labels map[string]string) float64 {
			for _, m := range families[name].GetMetric() {
				have := map[string]string{}
				for _, l := range m.GetLabel() {
					have[l.GetName()] = l.GetValue()
				}
				match := true
				for k, v := range labels {
					match = match && have[k] == v
				}
				if match {
					for _, v := range []float64{m.GetCounter().GetValue(), m.GetGauge().GetValue()} {
						if v != 0 {
							return v
						}
					}
					return 0
				}
			}
			return -1
		}
		with := func(extra map[string]string) map[string]string {
			out := map[string]string{}
			for k, v := range vmiLabels {
				out[k] = v
			}
			for k, v := range extra {
				out[k] = v
			}
			return out
		}
		var missing []string
		for _, c := range []struct {
			name   string
			labels map[string]string
			ok     func(float64) bool
		}{
			{"kubevirt_vmi_phase_count", map[string]string{"node": vmi.Status.NodeName, "phase": "running"}, func(v float64) bool { return v == 1 }},
			{"kubevirt_vmi_info", with(map[string]string{"phase": "running"}), func(v float64) bool { return v == 1 }},
			{"kubevirt_number_of_vms", map[string]string{"namespace": vm.Namespace}, func(v float64) bool { return v == 1 }},
			{"kubevirt_vmi_memory_resident_bytes", vmiLabels, func(v float64) bool { return v > 0 }},
			{"kubevirt_vmi_cpu_usage_seconds_total", vmiLabels, func(v float64) bool { return v > 0 }},
			{"kubevirt_vmi_storage_read_traffic_bytes_total", with(map[string]string{"drive": "containerdisk"}), func(v float64) bool { return v > 0 }},
			{"kubevirt_vmi_network_transmit_bytes_total", with(map[string]string{"interface": "default", "network": "default"}), func(v float64) bool { return v > 0 }},
			{"controller_runtime_reconcile_total", map[string]string{"controller": "virt-handler", "result": "success"}, func(v float64) bool { return v > 0 }},
			{"controller_runtime_reconcile_total", map[string]string{"controller": "virtualmachineinstance", "result": "success"}, func(v float64) bool { return v > 0 }},
			{"workqueue_depth", map[string]string{"name": "virt-handler"}, func(v float64) bool { return v >= 0 }},
			{"workqueue_depth", map[string]string{"name": "virtualmachine"}, func(v float64) bool { return v >= 0 }},
			{"kubevirt_rest_client_requests_total", map[string]string{"component": "virt-handler", "resource": "virtualmachineinstances/status", "verb": "patch"}, func(v float64) bool { return v > 0 }},
			{"virtkit_subresource_requests_total", map[string]string{"resource": "virtualmachineinstances", "subresource": "console", "code": "101"}, func(v float64) bool { return v > 0 }},
			{"virtkit_subresource_requests_total", map[string]string{"resource": "virtualmachines", "subresource": "portforward", "code": "101"}, func(v float64) bool { return v > 0 }},
			{"virtkit_subresource_requests_total", map[string]string{"resource": "virtualmachineinstances", "subresource": "vnc/screenshot", "code": "200"}, func(v float64) bool { return v > 0 }},
		} {
			if v := value(c.name, c.labels); !c.ok(v) {
				missing = append(missing, fmt.Sprintf("%s%v = %v", c.name, c.labels, v))
			}
		}
		return len(missing) == 0, strings.Join(missing, "; ")
	})

	// virtctl reset: the guest boots again at once, in the same VMI.
	w.virtctl(ctx, t, "reset", vm.Name, "-n", vm.Namespace)
	eventually(ctx, t, "the guest booted twice", func() (bool, string) {
		b, err := os.ReadFile(serial)
		n := strings.Count(string(b), testguest.BootedMarker)
		return err == nil && n == 2, fmt.Sprintf("%d boots, %v", n, err)
	})
	after := &virtv1.VirtualMachineInstance{}
	must(t, w.c.Get(ctx, client.ObjectKeyFromObject(vm), after))
	if after.UID != vmi.UID || after.Status.Phase != virtv1.Running {
		t.Errorf("after the reset: VMI %s in phase %s, want the same one running", after.UID, after.Status.Phase)
	}
	w.consoleShows(ctx, t, after, "VIRTKIT-HEARTBEAT")

	w.stopStartDelete(ctx, t, vm, vmi)
}

// stopStartDelete proves the life of a running VM from the example
// manifest after its start: `virtctl stop` (the binary) ends it
// gracefully, `virtctl start` boots it again, and deleting the VM leaves
// nothing behind: no VM, VMI, pod or launcher folder (the leftover check
// of TestMain looks for processes, mounts and netns).
func (w *world) stopStartDelete(ctx context.Context, t *testing.T, vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) {
	t.Helper()
	serial := w.serialLog(ctx, t, vmi)
	// virtctl stop: the guest powers off (ACPI), the VMI goes.
	w.virtctl(ctx, t, "stop", vm.Name, "-n", vm.Namespace)
	waitFile(ctx, t, serial, "VIRTKIT-POWEROFF") // before the pod, and its folder, go
	w.waitNoVMI(ctx, t, vm)

	// virtctl start: a new VMI boots again.
	w.virtctl(ctx, t, "start", vm.Name, "-n", vm.Namespace)
	again := w.waitRunning(ctx, t, vm)
	if again.UID == vmi.UID {
		t.Fatalf("the VMI after start is the old one")
	}
	w.consoleShows(ctx, t, again, "VIRTKIT-HEARTBEAT")

	// kubectl delete: no VM, VMI, pod, launcher or domain remains.
	must(t, w.c.Delete(ctx, vm))
	eventually(ctx, t, "the VM, its VMI and its pods gone", func() (bool, string) {
		var pods corev1.PodList
		must(t, w.c.List(ctx, &pods, client.InNamespace(vm.Namespace)))
		vmErr := w.c.Get(ctx, client.ObjectKeyFromObject(vm), &virtv1.VirtualMachine{})
		vmiErr := w.c.Get(ctx, client.ObjectKeyFromObject(vm), &virtv1.VirtualMachineInstance{})
		return len(pods.Items) == 0 && apierrors.IsNotFound(vmErr) && apierrors.IsNotFound(vmiErr),
			fmt.Sprintf("%d pods, VM: %v, VMI: %v", len(pods.Items), vmErr, vmiErr)
	})
	// A launcher's folder is its pod's emptyDir: the node removes it with
	// the pod.
	testenv.EventuallyEvery(testenv.Within(t, 30*time.Second), t, 250*time.Millisecond, "the launcher folders removed", func() (bool, string) {
		left := w.podFoldersLeft(ctx, t)
		return len(left) == 0, fmt.Sprintf("pod folders left: %v", left)
	})
}

// TestRefusals: a bad manifest is refused by the webhook with its field
// path; a VM whose image is missing says so instead of a silent Pending.
func TestRefusals(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bad := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
	bad.Name = "bad"
	bad.Spec.Template.Spec.Domain.Devices.Disks[0].Disk.Bus = "floppy"
	err := w.c.Create(ctx, bad)
	if err == nil || !strings.Contains(err.Error(), "spec.template.spec.domain.devices.disks[0].disk.bus") {
		t.Errorf("creating a VM with a bad disk bus = %v, want a refusal naming the field", err)
	}

	missing := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
	missing.Name = "missing"
	missingImage := w.localImage("no/such-image:1")
	missing.Spec.Template.Spec.Volumes[0].ContainerDisk.Image = missingImage
	must(t, w.c.Create(ctx, missing))
	eventually(ctx, t, "the VM saying its image is missing", func() (bool, string) {
		vm := &virtv1.VirtualMachine{}
		must(t, w.c.Get(ctx, client.ObjectKeyFromObject(missing), vm))
		vmi := &virtv1.VirtualMachineInstance{}
		msg := ""
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(missing), vmi); err == nil {
			for _, c := range vmi.Status.Conditions {
				if c.Type == virtv1.VirtualMachineInstanceSynchronized {
					msg = c.Reason + ": " + c.Message
				}
			}
		}
		return vm.Status.PrintableStatus == virtv1.VirtualMachineStatusErrImagePull && strings.Contains(msg, missingImage),
			fmt.Sprintf("VM %s, VMI Synchronized %q", vm.Status.PrintableStatus, msg)
	})

	// Deleting it leaves nothing either: no pod, and no pod folder on the
	// node (its launcher never started; the node made the pod's volumes).
	must(t, w.c.Delete(ctx, missing))
	eventually(ctx, t, "the VM, its pod and its pod folder gone", func() (bool, string) {
		var pods corev1.PodList
		must(t, w.c.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels{"vm.kubevirt.io/name": "missing"}))
		left := w.podFoldersLeft(ctx, t)
		vmiErr := w.c.Get(ctx, client.ObjectKeyFromObject(missing), &virtv1.VirtualMachineInstance{})
		return len(pods.Items) == 0 && len(left) == 0 && apierrors.IsNotFound(vmiErr),
			fmt.Sprintf("%d pods, pod folders left: %v, VMI: %v", len(pods.Items), left, vmiErr)
	})
}

// virtctl runs the virtctl binary `make daemons` builds, as a user would.
func (w *world) virtctl(ctx context.Context, t *testing.T, args ...string) {
	t.Helper()
	if _, err := w.tryVirtctl(ctx, t, args...); err != nil {
		t.Fatalf("virtctl %s: %v (its output is logged above)", strings.Join(args, " "), err)
	}
}

// tryVirtctl runs our virtctl with the world's kubeconfig, logs its output
// and returns it with the error, for the tests that expect a refusal.
func (w *world) tryVirtctl(ctx context.Context, t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.CommandContext(ctx, testenv.Output(t, "bin", "virtctl"), append(args, "--kubeconfig", w.kubeconfig)...).CombinedOutput()
	t.Logf("virtctl %s: %s", strings.Join(args, " "), strings.TrimSpace(string(out)))
	return string(out), err
}

func (w *world) waitRunning(ctx context.Context, t *testing.T, vm *virtv1.VirtualMachine) *virtv1.VirtualMachineInstance {
	t.Helper()
	var vmi *virtv1.VirtualMachineInstance
	eventually(ctx, t, "VMI "+vm.Name+" Running", func() (bool, string) {
		v := &virtv1.VirtualMachineInstance{}
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(vm), v); err != nil {
			return false, err.Error()
		}
		vmi = v
		return v.Status.Phase == virtv1.Running, fmt.Sprintf("phase %s conditions %+v", v.Status.Phase, v.Status.Conditions)
	})
	return vmi
}

// waitNoVMI waits until the VMI of obj's name (a VM's, or the VMI's own) is
// gone.
func (w *world) waitNoVMI(ctx context.Context, t *testing.T, obj client.Object) {
	t.Helper()
	eventually(ctx, t, "VMI "+obj.GetName()+" gone", func() (bool, string) {
		v := &virtv1.VirtualMachineInstance{}
		err := w.c.Get(ctx, client.ObjectKeyFromObject(obj), v)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("phase %s, err %v", v.Status.Phase, err)
	})
}

// consoleShows reads the VMI's console through the apiserver until want.
func (w *world) consoleShows(ctx context.Context, t *testing.T, vmi *virtv1.VirtualMachineInstance, want string) {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	con, err := w.sub.Console(cctx, vmi.Namespace, vmi.Name)
	must(t, err)
	defer con.Close()
	go func() { <-cctx.Done(); con.Close() }()
	sc := bufio.NewScanner(con)
	var seen []string
	for sc.Scan() {
		if strings.Contains(sc.Text(), want) {
			return
		}
		seen = append(seen, sc.Text())
	}
	t.Fatalf("console of %s never showed %q; saw %q (%v)", vmi.Name, want, seen, sc.Err())
}

func httpAnswers(ctx context.Context, t *testing.T, url, want string) {
	t.Helper()
	eventually(ctx, t, url+" answering", func() (bool, string) {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 200 && strings.Contains(string(b), want), fmt.Sprintf("%d %q", resp.StatusCode, b)
	})
}

// waitFile waits until the file at path holds want. Meanwhile it reports
// the file's size and its last lines that start as
// want does (its first word).
func waitFile(ctx context.Context, t *testing.T, path, want string) {
	t.Helper()
	word, _, _ := strings.Cut(want, " ")
	eventually(ctx, t, path+" showing "+want, func() (bool, string) {
		b, err := os.ReadFile(path)
		if err != nil {
			return false, err.Error()
		}
		var like []string
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); strings.HasPrefix(l, word) {
				like = append(like, l)
			}
		}
		return strings.Contains(string(b), want), fmt.Sprintf("%d bytes; last lines like it: %q", len(b), like[max(0, len(like)-5):])
	})
}

// readVM reads a VirtualMachine manifest; its containerDisks of
// localhost:5000 name the running test's registry (see up).
func (w *world) readVM(t *testing.T, path string) *virtv1.VirtualMachine {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	vm := &virtv1.VirtualMachine{}
	must(t, yaml.UnmarshalStrict(b, vm))
	vm.Namespace = "default"
	for _, v := range vm.Spec.Template.Spec.Volumes {
		if cd := v.ContainerDisk; cd != nil && strings.HasPrefix(cd.Image, manifestRegistry) {
			cd.Image = w.localImage(strings.TrimPrefix(cd.Image, manifestRegistry))
		}
	}
	return vm
}

// localImage is REPOSITORY:TAG in the running test's registry.
func (w *world) localImage(repoTag string) string {
	return w.registry + "/" + repoTag
}

func eventually(ctx context.Context, t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	testenv.EventuallyEvery(ctx, t, 250*time.Millisecond, what, cond)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
