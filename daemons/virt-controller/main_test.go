package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/internal/testenv/kubeenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The binary takes the lease, then turns a VM into a VMI and a launcher pod,
// and its /metrics has the documented series (docs/metrics.md).
func TestVirtControllerBinary(t *testing.T) {
	cp := kubeenv.ControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := cp.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt"}}); err != nil {
		t.Fatal(err)
	}
	admin, err := cp.Env.AddUser(envtest.User{Name: "virt-controller", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	dir := testenv.Dir(t)
	kcPath := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kcPath, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "virt-controller")
	if b, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	metricsAddr := "127.0.0.1:" + strconv.Itoa(testenv.FreePorts(t, 1))
	cmd := exec.Command(bin, "--launcher-image", "localhost/virt-launcher:test", "--emulation",
		"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", "0")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kcPath, testenv.OwnerEnv+"="+strconv.Itoa(os.Getpid()))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()

	always := virtv1.RunStrategyAlways
	vm := &virtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "tiny", Namespace: "default"},
		Spec: virtv1.VirtualMachineSpec{RunStrategy: &always, Template: &virtv1.VirtualMachineInstanceTemplateSpec{
			Spec: virtv1.VirtualMachineInstanceSpec{
				Domain: virtv1.DomainSpec{
					Resources: virtv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
					Devices:   virtv1.Devices{Disks: []virtv1.Disk{{Name: "root", DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: "virtio"}}}}},
				},
				Volumes: []virtv1.Volume{{Name: "root", VolumeSource: virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "localhost/guest:1"}}}},
			},
		}},
	}
	if err := c.Create(ctx, vm); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(ctx, t, "a launcher pod and virt-controller's leader lease", func() (bool, string) {
		var pods corev1.PodList
		var lease coordinationv1.Lease
		if err := c.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels{"kubevirt.io": "virt-launcher"}); err != nil {
			t.Fatal(err)
		}
		leaseErr := c.Get(ctx, client.ObjectKey{Namespace: "kubevirt", Name: "virt-controller.kubevirt.io"}, &lease)
		if len(pods.Items) == 1 && leaseErr == nil && lease.Spec.HolderIdentity != nil {
			return true, ""
		}
		return false, fmt.Sprintf("launcher pods %d, lease %v; virt-controller said:\n%s", len(pods.Items), leaseErr, out.String())
	})

	// The VMI waits for a node in Scheduling; the VM, the migrations (none)
	// and the outdated VMIs (none counted: the CR is not Deployed) are
	// counted too.
	testenv.WaitSeries(ctx, t, nil, "http://"+metricsAddr+"/metrics", out.String,
		`kubevirt_vmi_phase_count{flavor="<none>",instance_type="<none>",node="",os="<none>",phase="scheduling",preference="<none>",workload="<none>"} 1`,
		`kubevirt_vmi_info{`,
		`kubevirt_number_of_vms{namespace="default"} 1`,
		`kubevirt_vmi_migrations_in_pending_phase 0`,
		`kubevirt_vmi_migrations_in_running_phase 0`,
		`kubevirt_vmi_number_of_outdated 0`,
		`kubevirt_rest_client_requests_total{code="201",component="virt-controller",resource="pods",verb="create"} 1`,
		`controller_runtime_reconcile_total{controller="virtualmachineinstance",result="success"}`,
		`controller_runtime_reconcile_time_seconds_bucket{controller="virtualmachine",`,
		`workqueue_depth{controller="virtualmachineinstance",name="virtualmachineinstance",priority=`,
	)
}
