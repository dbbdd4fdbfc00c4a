package node_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"

	vmictl "github.com/virtkit/virtkit/controllers/vmi"
)

// launcherPod runs a launcher pod as controllers/vmi renders it, with a
// script in place of virt-launcher that keeps the launcher's side of the
// contract: it finds its containerDisk (an image volume of the node's
// registry, the disk in its /disk folder), marks itself ready in its
// folder (the pod's emptyDir, mounted where the host has no folder), and
// ends with a termination message when the handler's side asks it to. It
// runs as the pod says, as the qemu user.
func launcherPod(ctx context.Context, t *testing.T, c *cluster, diskImage string) {
	t.Helper()
	vmi := &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "vm1", Namespace: "t", UID: types.UID("0f5b9a3e-5c1d-4a43-9d8e-" + fmt.Sprintf("%012d", os.Getpid()))},
		Spec: virtv1.VirtualMachineInstanceSpec{
			Domain: virtv1.DomainSpec{Resources: virtv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}},
			Volumes: []virtv1.Volume{{Name: "rootdisk", VolumeSource: virtv1.VolumeSource{
				ContainerDisk: &virtv1.ContainerDiskSource{Image: diskImage}}}},
		},
	}
	pod, err := vmictl.RenderPod(vmi, vmictl.PodOptions{LauncherImage: "example.com/virt-launcher:v1", Emulation: true})
	if err != nil {
		t.Fatal(err)
	}
	compute := &pod.Spec.Containers[0]
	// $0 is virt-launcher, then its flags: --dir DIR ...
	// What a compromised launcher would try first, each refused as the
	// pod's security context runs it: write a node file, mount, enter the
	// node's namespaces, gain privileges through a set-user-ID binary.
	script := `d=$2
fail() { echo "$1" > /dev/termination-log; exit 8; }
test "$(id -u):$(id -g)" = 107:107 || fail "runs as $(id -u):$(id -g)"
grep -q '^CapEff:.0000000000000000$' /proc/self/status || fail "holds capabilities"
touch /etc/vkt-launcher-attack 2>/dev/null && fail "wrote /etc/vkt-launcher-attack"
mount -t tmpfs none "$d" 2>/dev/null && fail "mounted"
nsenter -t 1 -m -n true 2>/dev/null && fail "entered the node's namespaces"
test "$(su -c 'id -u' root </dev/null 2>/dev/null)" = 0 && fail "became root with su"
test -f "$DISK/disk/disk.img" || exit 9
touch "$d/ready"
while ! test -f "$d/stop"; do sleep 0.1; done
echo "guest stopped" > /dev/termination-log`
	compute.Command = append([]string{"/bin/sh", "-c", script}, compute.Command...)
	for _, m := range compute.VolumeMounts {
		if m.Name == "rootdisk" {
			compute.Env = append(compute.Env, corev1.EnvVar{Name: "DISK", Value: m.MountPath})
		}
	}
	pod.OwnerReferences = nil // no VMI object in this API
	created, err := c.cs.CoreV1().Pods("t").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The handler finds the pod's folder, an emptyDir, by the pod's UID.
	hostDir := vmictl.PodFolder(filepath.Join(c.cfg.StateDir, "pods"), created)
	c.waitPod(ctx, pod.Name, "Ready", podReady)
	if _, err := os.Lstat("/etc/vkt-launcher-attack"); err == nil {
		os.Remove("/etc/vkt-launcher-attack")
		t.Error("launcher: a launcher pod wrote /etc/vkt-launcher-attack on the node")
	}
	if _, err := os.Stat(filepath.Join(hostDir, "ready")); err != nil {
		t.Errorf("launcher: the ready file is not in the handler's folder: %v", err)
	}
	if err := os.WriteFile(filepath.Join(hostDir, "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got := c.waitPod(ctx, pod.Name, "Succeeded", phaseIs(corev1.PodSucceeded))
	if term := got.Status.ContainerStatuses[0].State.Terminated; term.Message != "guest stopped\n" {
		t.Errorf("launcher: termination message %q", term.Message)
	}
	if err := c.cs.CoreV1().Pods("t").Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitGone(ctx, pod.Name)
	if _, err := os.Lstat(hostDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("launcher: the pod's folder outlived the pod: %v", err)
	}
}
