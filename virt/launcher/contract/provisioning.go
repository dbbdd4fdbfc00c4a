package contract

// FlagBindOnly makes the launcher binary run no VMI: it exits 0 at once.
// It is the command of a VMI's temporary provisioning pod (KubeVirt's
// WaitForFirstConsumer pod): a launcher pod in all but its command, whose
// scheduling binds, on the node the VMI would run on, the claims of
// DataVolumes that wait for their first consumer.
const FlagBindOnly = "bind-only"
