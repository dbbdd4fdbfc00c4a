package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/controllers/conditions"
	"github.com/virtkit/virtkit/internal/testguest"
)

// A VMI's readiness and liveness probes, as KubeVirt runs them: on the
// launcher pod's compute container, TCP and HTTP probes through the pod
// network into the guest, exec and guestAgentPing probes through the
// guest's agent. The VMI is Ready as its pod is: an HTTP probe of the
// guest's web server and an exec probe in the guest pass, a TCP probe of a
// port nothing listens on keeps the VMI not Ready (the pod's reason on
// it) while its guest runs, and a failing liveness probe ends the VMI.
func TestVMIProbes(t *testing.T) {
	w := up(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	probed := func(name string, strategy virtv1.VirtualMachineRunStrategy, readiness, liveness *virtv1.Probe) *virtv1.VirtualMachine {
		vm := w.readVM(t, "../../examples/manifests/vm-tiny.yaml")
		vm.Name = name
		vm.Spec.RunStrategy = &strategy
		vm.Spec.Template.Spec.ReadinessProbe, vm.Spec.Template.Spec.LivenessProbe = readiness, liveness
		must(t, w.c.Create(ctx, vm))
		return vm
	}
	web := probed("probe-web", virtv1.RunStrategyAlways,
		&virtv1.Probe{Handler: virtv1.Handler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80)}}, PeriodSeconds: 2},
		&virtv1.Probe{Handler: virtv1.Handler{GuestAgentPing: &virtv1.GuestAgentPing{}}, PeriodSeconds: 5, TimeoutSeconds: 5, InitialDelaySeconds: 60})
	exec := probed("probe-exec", virtv1.RunStrategyAlways,
		&virtv1.Probe{Handler: virtv1.Handler{Exec: &corev1.ExecAction{Command: []string{"/bin/cat", "/proc/uptime"}}}, PeriodSeconds: 2, TimeoutSeconds: 5}, nil)
	// Not ready, then not alive: its liveness probe starts late enough for
	// the guest to have booted and been seen not ready.
	sick := probed("probe-sick", virtv1.RunStrategyOnce,
		&virtv1.Probe{Handler: virtv1.Handler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(81)}}, PeriodSeconds: 2},
		&virtv1.Probe{Handler: virtv1.Handler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "exit 3"}}},
			InitialDelaySeconds: 90, PeriodSeconds: 2, TimeoutSeconds: 5, FailureThreshold: 1})

	ready := func(v *virtv1.VirtualMachineInstance) *virtv1.VirtualMachineInstanceCondition {
		return conditions.VMI().Find(v.Status.Conditions, virtv1.VirtualMachineInstanceReady)
	}
	var webVMI *virtv1.VirtualMachineInstance
	for _, vm := range []*virtv1.VirtualMachine{web, exec, sick} {
		w.waitRunning(ctx, t, vm)
	}
	for _, vm := range []*virtv1.VirtualMachine{web, exec} {
		v := w.waitVMI(ctx, t, vm, "Ready through its probe", func(v *virtv1.VirtualMachineInstance) bool {
			c := ready(v)
			return v.Status.Phase == virtv1.Running && c != nil && c.Status == corev1.ConditionTrue
		})
		pod := launcherPod(ctx, t, w, v)
		if c := conditions.Pod().Find(pod.Status.Conditions, corev1.PodReady); c == nil || c.Status != corev1.ConditionTrue {
			t.Errorf("VMI %s is Ready but its launcher pod %s is not: %+v", v.Name, pod.Name, pod.Status.Conditions)
		}
		if vm == web {
			webVMI = v
		}
	}

	v := w.vmiOf(ctx, t, sick)
	waitFile(ctx, t, w.serialLog(ctx, t, v), testguest.ReadyMarker)
	w.waitVMI(ctx, t, sick, "not Ready, as its pod", func(v *virtv1.VirtualMachineInstance) bool {
		c := ready(v)
		return c != nil && c.Status == corev1.ConditionFalse && c.Reason == "ContainersNotReady"
	})
	failed := w.waitVMI(ctx, t, sick, "Failed by its liveness probe", func(v *virtv1.VirtualMachineInstance) bool { return v.Status.Phase == virtv1.Failed })
	if c := ready(failed); c == nil || c.Status != corev1.ConditionFalse {
		t.Errorf("the failed VMI's Ready condition: %+v", c)
	}

	// The web VMI's agent answered its liveness probe throughout: the
	// same VMI still runs, in the same pod, which never restarted.
	if v := w.vmiOf(ctx, t, web); v.Status.Phase != virtv1.Running || v.UID != webVMI.UID {
		t.Errorf("VMI %s with a passing liveness probe: phase %s, UID %s (was %s)", v.Name, v.Status.Phase, v.UID, webVMI.UID)
	}

	for _, vm := range []*virtv1.VirtualMachine{web, exec, sick} {
		must(t, w.c.Delete(ctx, vm))
	}
	for _, vm := range []*virtv1.VirtualMachine{web, exec, sick} {
		w.waitNoVMI(ctx, t, vm)
	}
}
