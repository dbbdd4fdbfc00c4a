package contract

import "strconv"

// The launcher's VMI probes, KubeVirt's virt-probe: a VMI's exec and
// guestAgentPing probes become exec probes of the compute container that
// run the launcher binary in one of these modes. It reads the libvirt URI
// from the ready file below --dir, asks the guest agent of the VMI's
// domain, and exits 0 when the guest answered as the probe wants, 1 when
// it did not or could not be asked.
const (
	// FlagGuestAgentPing asks for guest-ping.
	FlagGuestAgentPing = "guest-agent-ping"
	// FlagGuestExec runs the command after "--" in the guest (guest-exec)
	// and succeeds when it exits 0.
	FlagGuestExec = "guest-exec"
	// FlagProbeTimeout bounds the asking (a Go duration, "1s").
	FlagProbeTimeout = "probe-timeout"
)

// GuestAgentPingCommand is the command line of a guestAgentPing probe of the
// VMI namespace/name whose launcher folder is dir, within timeoutSeconds.
func GuestAgentPingCommand(dir, namespace, name string, timeoutSeconds int32) []string {
	return append(probeCommand(dir, namespace, name, timeoutSeconds), "--"+FlagGuestAgentPing)
}

// GuestExecCommand is the command line of an exec probe that runs command
// (a path and its arguments) in the guest within timeoutSeconds.
func GuestExecCommand(dir, namespace, name string, timeoutSeconds int32, command []string) []string {
	return append(append(probeCommand(dir, namespace, name, timeoutSeconds), "--"+FlagGuestExec, "--"), command...)
}

func probeCommand(dir, namespace, name string, timeoutSeconds int32) []string {
	return []string{Binary,
		"--" + FlagDir, dir,
		"--" + FlagNamespace, namespace,
		"--" + FlagName, name,
		"--" + FlagProbeTimeout, strconv.FormatInt(int64(max(timeoutSeconds, 1)), 10) + "s",
	}
}
