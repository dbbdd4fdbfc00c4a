package vmi

import (
	"path"

	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/launcher/contract"
)

// LibvirtStartupDelay is added to the initial delay of a VMI's readiness
// and liveness probes, in seconds, as KubeVirt adds it: the guest cannot
// answer before the launcher has started libvirt and QEMU.
const LibvirtStartupDelay = 10

// computeProbes returns the compute container's readiness and liveness
// probes for vmi, whose launcher folder is dir, as KubeVirt renders them:
// TCP and HTTP probes go to the pod's address unchanged (the pod network
// binding carries them into the guest); exec and guestAgentPing probes
// become the launcher's probe modes, which ask the guest's agent; each gets
// LibvirtStartupDelay more initial delay, and an exec one a second more
// time than the guest gets. Without a readiness probe the container is
// ready once the launcher accepts a domain (its ready file).
func computeProbes(vmi *virtv1.VirtualMachineInstance, dir string) (readiness, liveness *corev1.Probe) {
	readiness = &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", path.Join(dir, contract.ReadyFile)}}},
		PeriodSeconds:    2,
		FailureThreshold: 1,
	}
	if p := vmi.Spec.ReadinessProbe; p != nil {
		readiness = computeProbe(vmi, dir, p)
	}
	if p := vmi.Spec.LivenessProbe; p != nil {
		liveness = computeProbe(vmi, dir, p)
	}
	return readiness, liveness
}

// computeProbe is the container probe for the VMI probe p.
func computeProbe(vmi *virtv1.VirtualMachineInstance, dir string, p *virtv1.Probe) *corev1.Probe {
	out := &corev1.Probe{
		InitialDelaySeconds: p.InitialDelaySeconds + LibvirtStartupDelay,
		TimeoutSeconds:      p.TimeoutSeconds,
		PeriodSeconds:       p.PeriodSeconds,
		SuccessThreshold:    p.SuccessThreshold,
		FailureThreshold:    p.FailureThreshold,
		ProbeHandler: corev1.ProbeHandler{
			HTTPGet:   p.HTTPGet.DeepCopy(),
			TCPSocket: p.TCPSocket.DeepCopy(),
		},
	}
	timeout := max(p.TimeoutSeconds, 1) // the API's default
	switch {
	case p.GuestAgentPing != nil:
		out.Exec = &corev1.ExecAction{Command: contract.GuestAgentPingCommand(dir, vmi.Namespace, vmi.Name, timeout)}
		out.TimeoutSeconds = timeout + 1
	case p.Exec != nil && len(p.Exec.Command) > 0:
		out.Exec = &corev1.ExecAction{Command: contract.GuestExecCommand(dir, vmi.Namespace, vmi.Name, timeout, p.Exec.Command)}
		out.TimeoutSeconds = timeout + 1
	}
	return out
}
