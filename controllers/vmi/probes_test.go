package vmi

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	virtv1 "kubevirt.io/api/core/v1"
)

// A VMI's probes land on the compute container as KubeVirt renders them.
func TestRenderPodProbes(t *testing.T) {
	dir := RunDir(newVMI())
	launcher := func(mode ...string) []string {
		return append([]string{"virt-launcher", "--dir", dir, "--namespace", "default", "--name", "vmi1"}, mode...)
	}
	readyFile := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", dir + "/ready"}}},
		PeriodSeconds: 2, FailureThreshold: 1}
	http := &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(80)}
	for _, tc := range []struct {
		name                string
		readiness, liveness *virtv1.Probe
		wantReady, wantLive *corev1.Probe
	}{
		{name: "none: ready once the launcher is", wantReady: readyFile},
		{
			name:      "HTTP readiness, TCP liveness: unchanged but the delay",
			readiness: &virtv1.Probe{Handler: virtv1.Handler{HTTPGet: http}, InitialDelaySeconds: 5, PeriodSeconds: 3, TimeoutSeconds: 2, FailureThreshold: 4, SuccessThreshold: 2},
			liveness:  &virtv1.Probe{Handler: virtv1.Handler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(22)}}},
			wantReady: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: http}, InitialDelaySeconds: 15, PeriodSeconds: 3, TimeoutSeconds: 2, FailureThreshold: 4, SuccessThreshold: 2},
			wantLive:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(22)}}, InitialDelaySeconds: 10},
		},
		{
			name:      "guestAgentPing and exec: the launcher asks the agent, a second more",
			readiness: &virtv1.Probe{Handler: virtv1.Handler{GuestAgentPing: &virtv1.GuestAgentPing{}}, TimeoutSeconds: 3},
			liveness:  &virtv1.Probe{Handler: virtv1.Handler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}}},
			wantReady: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: launcher("--probe-timeout", "3s", "--guest-agent-ping")}},
				InitialDelaySeconds: 10, TimeoutSeconds: 4},
			wantLive: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: launcher("--probe-timeout", "1s", "--guest-exec", "--", "cat", "/tmp/healthy")}},
				InitialDelaySeconds: 10, TimeoutSeconds: 2},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := newVMI(func(v *virtv1.VirtualMachineInstance) {
				v.Spec.ReadinessProbe, v.Spec.LivenessProbe = tc.readiness, tc.liveness
			})
			pod, err := RenderPod(vmi, kvmOpts)
			if err != nil {
				t.Fatal(err)
			}
			c := pod.Spec.Containers[0]
			if diff := cmp.Diff(tc.wantReady, c.ReadinessProbe); diff != "" {
				t.Errorf("readiness (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantLive, c.LivenessProbe); diff != "" {
				t.Errorf("liveness (-want +got):\n%s", diff)
			}
		})
	}
}
