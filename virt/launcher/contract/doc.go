// Package contract is the handler-launcher contract as plain values: the
// names of the entries of a launcher's per-VMI folder and the node folders
// that hold them, the launcher's exit codes, the name and flags of its
// binary, and the device resources a launcher pod asks the handler's device
// plugins for (docs/sdk/launcher.md).
//
// It owns these values and nothing else, and imports nothing, so that the
// components on either side share them: virt/launcher (which writes the
// folder and exits with the codes), daemons/virt-launcher (which parses the
// flags), the handler (which reads the folder) and controllers/vmi (which
// renders the launcher pod's command and readiness probe and reads its exit
// code) without pulling in virt/launcher's dependencies (virt/domain,
// virt/network, virt/storage). Paths built from these names live in
// virt/launcher's Layout.
package contract
